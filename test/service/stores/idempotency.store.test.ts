import { randomBytes } from 'node:crypto';
import { FixedClock } from '../../../src/core/clock';
import { IdempotencyStore } from '../../../src/modules/idempotency/idempotency.store';
import { Params } from '../../../src/db/params';
import { cteList } from '../../../src/db/statement';
import { DIALECT } from '../../helpers/db';
import { START, startServices, type ServiceHarness } from '../../helpers/services';

/**
 * IdempotencyStore's contract, the same on both dialects (`npm test` runs this file on SQLite
 * and on PostgreSQL): a key is claimed once, answered as asked, read back as stored.
 */
let h: ServiceHarness;
let store: IdempotencyStore;
const clock = new FixedClock(START);
beforeAll(async () => {
  h = await startServices();
  store = new IdempotencyStore(h.services.db, clock, 24);
});
beforeEach(() => clock.set(START));
afterAll(() => h?.stop());

const scope = 'acct_store:test';
const newKey = () => `k-${randomBytes(6).toString('hex')}`;
const HOUR = 3_600_000;

describe('IdempotencyStore', () => {
  it('should let exactly one claim of a key succeed, even when claims race', async () => {
    const key = newKey();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => h.services.db.transaction((t) => store.claim(t, { scope, key, fingerprint: `fp${i}` }))),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const stored = await store.read(scope, key);
    expect(stored).toMatchObject({ state: 'running', responseStatus: null, responseBody: null });
    expect(stored!.expiresAt.getTime()).toBe(START.getTime() + 24 * HOUR);
    expect(['fp0', 'fp1', 'fp2', 'fp3', 'fp4', 'fp5']).toContain(stored!.requestHash);
  });

  it('should keep keys of other scopes apart', async () => {
    const key = newKey();
    expect(await store.claim(undefined, { scope, key, fingerprint: 'a' })).toBe(true);
    expect(await store.claim(undefined, { scope: 'acct_store:live', key, fingerprint: 'a' })).toBe(true);
    expect(await store.read('acct_other:test', key)).toBeNull();
  });

  it('should roll a claim back with its transaction', async () => {
    const key = newKey();
    await expect(h.services.db.transaction(async (t) => {
      await store.claim(t, { scope, key, fingerprint: 'a' });
      throw new Error('crash after the claim');
    })).rejects.toThrow('crash after the claim');
    expect(await store.read(scope, key)).toBeNull();
    expect(await store.claim(undefined, { scope, key, fingerprint: 'a' })).toBe(true);
  });

  it('should answer a key, and an object\'s key only while it still runs for that object', async () => {
    const plain = newKey();
    await store.claim(undefined, { scope, key: plain, fingerprint: 'a' });
    expect(await store.answer(undefined, { scope, key: plain }, 201, '{"id":"cus_1"}')).toBe(true);
    expect(await store.read(scope, plain)).toMatchObject({ state: 'completed', responseStatus: 201, responseBody: '{"id":"cus_1"}' });

    const owned = newKey();
    await store.claim(undefined, { scope, key: owned, fingerprint: 'a', objectId: 'pay_1' });
    expect(await store.answer(undefined, { scope, key: owned, objectId: 'pay_2' }, 201, '{"id":"pay_2"}')).toBe(false);
    expect(await store.answer(undefined, { scope, key: owned, objectId: 'pay_1' }, 201, '{"id":"pay_1","status":"pending"}')).toBe(true);
    // The first answer stands: the settled object does not replace it.
    expect(await store.answer(undefined, { scope, key: owned, objectId: 'pay_1' }, 201, '{"id":"pay_1","status":"succeeded"}')).toBe(false);
    expect((await store.read(scope, owned))!.responseBody).toBe('{"id":"pay_1","status":"pending"}');
  });

  it('should revise an object\'s answer only while it is that object as recorded with the status named', async () => {
    const revise = (key: string, objectId: string, recorded: string, body: string) =>
      h.services.db.transaction((t) => store.reviseAnswer(t, { scope, key, objectId }, 201, recorded, body));
    const failed = '{"id":"pay_9","status":"failed"}';
    const review = '{"id":"pay_9","status":"requires_review"}';
    const answered = newKey();
    await store.claim(undefined, { scope, key: answered, fingerprint: 'a', objectId: 'pay_9' });
    // Still running: nothing was answered, nothing is revised.
    expect(await revise(answered, 'pay_9', 'failed', review)).toBe(false);
    await store.answer(undefined, { scope, key: answered, objectId: 'pay_9' }, 201, failed);
    // Another object, or the object as recorded otherwise: the answer stays.
    expect(await revise(answered, 'pay_8', 'failed', review)).toBe(false);
    expect(await revise(answered, 'pay_9', 'succeeded', review)).toBe(false);
    expect((await store.read(scope, answered))!.responseBody).toBe(failed);
    expect(await revise(answered, 'pay_9', 'failed', review)).toBe(true);
    expect(await store.read(scope, answered)).toMatchObject({ state: 'completed', responseStatus: 201, responseBody: review, requestHash: 'a' });
    // Once: the answer is no longer the failed payment.
    expect(await revise(answered, 'pay_9', 'failed', '{"id":"pay_9","status":"other"}')).toBe(false);

    // The pending answer its request gave is that request's, not recovery's.
    const pending = newKey();
    await store.claim(undefined, { scope, key: pending, fingerprint: 'a', objectId: 'pay_7' });
    await store.answer(undefined, { scope, key: pending, objectId: 'pay_7' }, 201, '{"id":"pay_7","status":"pending"}');
    expect(await revise(pending, 'pay_7', 'failed', '{"id":"pay_7","status":"requires_review"}')).toBe(false);
    // A sealed answer, or a key answered without an object, is never touched.
    const sealed = newKey();
    await store.claim(undefined, { scope, key: sealed, fingerprint: 'a', objectId: 'pay_6' });
    await store.answer(undefined, { scope, key: sealed, objectId: 'pay_6' }, 201, 'sealed:xyz');
    expect(await revise(sealed, 'pay_6', 'failed', '{"id":"pay_6","status":"requires_review"}')).toBe(false);
    const plain = newKey();
    await store.claim(undefined, { scope, key: plain, fingerprint: 'a' });
    await store.answer(undefined, { scope, key: plain }, 201, '{"id":"pay_5","status":"failed"}');
    expect(await revise(plain, 'pay_5', 'failed', '{"id":"pay_5","status":"requires_review"}')).toBe(false);
  });

  it('should free a key only once it has expired', async () => {
    const key = newKey();
    await store.claim(undefined, { scope, key, fingerprint: 'a' });
    await store.deleteIfExpired(scope, key, new Date(START.getTime() + 23 * HOUR));
    expect(await store.read(scope, key)).not.toBeNull();
    await store.deleteIfExpired(scope, key, new Date(START.getTime() + 24 * HOUR));
    expect(await store.read(scope, key)).toBeNull();
  });

  it('should purge expired keys and keep the others', async () => {
    const later = new Date(START.getTime() + 1000 * HOUR);
    const old = newKey();
    const fresh = newKey();
    await store.claim(undefined, { scope, key: old, fingerprint: 'a' });
    clock.set(later);
    await store.claim(undefined, { scope, key: fresh, fingerprint: 'a' });
    clock.set(new Date(later.getTime() + HOUR));
    expect(await store.purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await store.read(scope, old)).toBeNull();
    expect(await store.read(scope, fresh)).not.toBeNull();
  });

  if (DIALECT === 'postgres') {
    // The parts the payments' group commit composes (PostgreSQL only).
    it('should claim and answer many keys through its CTE parts, skipping keys already held', async () => {
      const held = newKey();
      const free = newKey();
      await store.claim(undefined, { scope, key: held, fingerprint: 'a', objectId: 'pay_held' });
      const p = new Params();
      const rows = [held, free].map((key) => ({ idem_scope: scope, idem_key: key, idem_hash: 'b', idem_object: `pay_${key}` }));
      const claimed = await h.services.db.select<{ idempotency_key: string }>(
        `WITH src AS (SELECT * FROM json_to_recordset(${p.add(JSON.stringify(rows), 'json')}) AS s(idem_scope text, idem_key text, idem_hash text, idem_object text)),
        ${cteList([store.claimPart('claim', 'src', p)])} SELECT idempotency_key FROM claim`,
        p.values,
      );
      expect(claimed.map((r) => r.idempotency_key)).toEqual([free]);
      expect((await store.read(scope, free))!.expiresAt.getTime()).toBe(START.getTime() + 24 * HOUR);

      const q = new Params();
      const answers = [held, free].map((key) => ({ idem_scope: scope, idem_key: key, idem_object: `pay_${key}`, idem_status: 201, idem_body: `{"id":"pay_${key}"}` }));
      await h.services.db.execute(
        `WITH src AS (SELECT * FROM json_to_recordset(${q.add(JSON.stringify(answers), 'json')}) AS s(idem_scope text, idem_key text, idem_object text, idem_status int, idem_body text)),
        ${cteList([store.answerPart('idem', 'src')])} SELECT 1`,
        q.values,
      );
      expect(await store.read(scope, free)).toMatchObject({ state: 'completed', responseBody: `{"id":"pay_${free}"}` });
      // Held for another object: not answered by this one.
      expect(await store.read(scope, held)).toMatchObject({ state: 'running', responseBody: null });
    });
  }
});
