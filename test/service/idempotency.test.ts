import { randomBytes } from 'node:crypto';
import { IdempotentReplay, idempotencyScope } from '../../src/core/idempotency';
import { DomainError } from '../../src/core/errors';
import { refusal, startServices, type ServiceHarness } from '../helpers/services';
import { someoneWaitsOnLock, waitFor } from '../helpers/wait';

let h: ServiceHarness;
let scope: string;
beforeAll(async () => {
  h = await startServices();
  const { test } = await h.account();
  scope = idempotencyScope(test.accountId, test.mode);
});
afterAll(() => h?.stop());

const newKey = () => `svc-${randomBytes(6).toString('hex')}`;

const OP = { status: 201 };
const SEALED_OP = { status: 201, sensitive: true };

/**
 * IdempotencyService.once: an operation's transaction claims the key first and stores the
 * operation's object last. What a client sees is in test/api/idempotency.test.ts.
 */
describe('IdempotencyService.once', () => {
  const fp = (body: unknown, requester = 'key_a') => h.services.idempotency.fingerprint('POST', '/v1/customers', requester, body);
  const idem = (key: string, body: unknown, requester = 'key_a') => ({ scope, key, fingerprint: fp(body, requester), requester });
  /** Runs `write` under the key in its own transaction; the replayed answer when the key has one. */
  const once = async <T>(k: ReturnType<typeof idem>, write: () => Promise<T>, op: { status: number; sensitive?: boolean } = OP) => {
    try {
      return { ran: await h.services.db.transaction((t) => h.services.idempotency.once(t, k, op, write)) };
    } catch (err) {
      if (err instanceof IdempotentReplay) return { replayed: { status: err.status, stored: err.stored } };
      throw err;
    }
  };

  it('should identify a request by method, path, API key and body, in any key order, without its CVC', () => {
    const body = { email: 'a@example.com', card: { number: '4242424242424242', cvc: '123' }, metadata: { a: '1', b: '2' } };
    const same = { metadata: { b: '2', a: '1' }, card: { cvc: '999', number: '4242424242424242' }, email: 'a@example.com' };
    expect(fp(same)).toBe(fp(body));
    expect(fp({ ...body, email: 'b@example.com' })).not.toBe(fp(body));
    expect(fp(body, 'key_b')).not.toBe(fp(body));
    expect(h.services.idempotency.fingerprint('POST', '/v1/products', 'key_a', body)).not.toBe(fp(body));
  });

  it('should run the operation once and replay its object with its status afterwards', async () => {
    const k = idem(newKey(), { email: 'x@example.com' });
    let runs = 0;
    const write = async () => ({ id: `cus_${++runs}`, object: 'customer' });
    expect(await once(k, write)).toEqual({ ran: { id: 'cus_1', object: 'customer' } });
    expect(await once(k, write)).toEqual({ replayed: { status: 201, stored: '{"id":"cus_1","object":"customer"}' } });
    expect(runs).toBe(1);
    // Another scope (account and mode) is another key.
    expect(await once({ ...k, scope: idempotencyScope('acct_other', 'test') }, write)).toEqual({ ran: { id: 'cus_2', object: 'customer' } });
  });

  it('should roll the claim back with an operation that fails, so the retry runs', async () => {
    const k = idem(newKey(), { n: 1 });
    await expect(once(k, async () => {
      throw new DomainError('invalid_parameter', 'refused', 'email');
    })).rejects.toMatchObject({ code: 'invalid_parameter' });
    expect(await once(k, async () => ({ id: 'cus_after' }))).toEqual({ ran: { id: 'cus_after' } });
  });

  it('should refuse a different request under an answered key with 409 idempotency_key_reused', async () => {
    const key = newKey();
    await once(idem(key, { n: 1 }), async () => ({ id: 'x' }));
    expect(await refusal(once(idem(key, { n: 2 }), async () => ({ id: 'y' })))).toEqual({ code: 'idempotency_key_reused', param: 'Idempotency-Key', status: 409 });
  });

  it('should make a concurrent request with the same key wait for the first and answer with its object', async () => {
    const k = idem(newKey(), { n: 7 });
    let runs = 0;
    // The first operation runs until the second request waits for its key (or, wrongly, runs too).
    // PostgreSQL: the second's claim blocks on the first's uncommitted key (the unique index);
    // SQLite: the second transaction is queued behind the first from the start.
    const secondWaits = async () => runs > 1 || h.services.db.dialect === 'sqlite' || (await someoneWaitsOnLock(h.services.db));
    const slow = async () => {
      runs += 1;
      const run = runs;
      await waitFor(secondWaits, { what: 'the second request to wait for the key' });
      return { id: `obj_${run}` };
    };
    const results = await Promise.all([once(k, slow), once(k, slow)]);
    expect(runs).toBe(1);
    expect(results).toContainEqual({ ran: { id: 'obj_1' } });
    expect(results).toContainEqual({ replayed: { status: 201, stored: '{"id":"obj_1"}' } });
  });

  it('should keep an answer holding a secret sealed and replay it only to the API key that created it', async () => {
    const key = newKey();
    const body = { name: 'ci' };
    await once(idem(key, body, 'key_a'), async () => ({ secret: 'sk_test_secret_x' }), SEALED_OP);
    const [row] = await h.services.db.select<{ response_body: string }>('SELECT response_body FROM idempotency_keys WHERE idempotency_key = $1', [key]);
    expect(row.response_body).not.toContain('sk_test_secret_x');
    expect(await once(idem(key, body, 'key_a'), async () => ({}), SEALED_OP)).toEqual({ replayed: { status: 201, stored: '{"secret":"sk_test_secret_x"}' } });
    // Another API key's request has another fingerprint: it never sees the secret.
    expect(await refusal(once(idem(key, body, 'key_b'), async () => ({}), SEALED_OP))).toMatchObject({ code: 'idempotency_key_reused', status: 409 });
  });

  it('should keep an answer for the retention window, then let the key be used afresh', async () => {
    const k = idem(newKey(), { n: 5 });
    await once(k, async () => ({ first: true }));
    const ttlMs = h.services.config.idempotencyTtlHours * 3_600_000;
    h.clock.advance(ttlMs - 1_000);
    expect(await once(k, async () => ({ first: false }))).toEqual({ replayed: { status: 201, stored: '{"first":true}' } });
    h.clock.advance(2_000);
    // Expired: free again, for another request too.
    expect(await once({ ...k, fingerprint: fp({ n: 6 }) }, async () => ({ second: true }))).toEqual({ ran: { second: true } });
  });
});
