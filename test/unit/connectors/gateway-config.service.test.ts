import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Database } from '../../../src/db/database';
import { FixedClock } from '../../../src/core/clock';
import { SecretBox } from '../../../src/core/crypto';
import type { RequestContext } from '../../../src/core/context';
import { GatewayConfigService } from '../../../src/modules/gateways/gateway-config.service';
import { DIALECT, type TestDatabase } from '../../helpers/db';
import { testIdempotency } from '../../helpers/idempotency';
import { migratedDatabase } from '../../helpers/migrated-db';
import { waitFor } from '../../helpers/wait';

let database: TestDatabase;
let db: Database;
let clock: FixedClock;
let gateways: GatewayConfigService;
/** As started with GATEWAY_ALLOW_PRIVATE_BASE_URL=true: a local emulator may be the base URL. */
let emulatorGateways: GatewayConfigService;
let changes: string[];
let accountSeq = 0;

beforeAll(async () => {
  ({ database, db } = await migratedDatabase());
  clock = new FixedClock(new Date('2024-05-06T07:08:09.123Z'));
  // internal.example resolves inside the network, everything else to a public address.
  const resolveHost = async (host: string) => (host === 'internal.example' ? ['93.184.216.34', '10.0.0.5'] : ['93.184.216.34']);
  gateways = new GatewayConfigService(db, new SecretBox(randomBytes(32)), { clock, resolveHost }, testIdempotency(db, clock));
  emulatorGateways = new GatewayConfigService(db, new SecretBox(randomBytes(32)), { clock, resolveHost, allowPrivateBaseUrl: true }, testIdempotency(db, clock));
  gateways.onChange((accountId) => changes.push(accountId));
});

beforeEach(() => {
  changes = [];
});

afterAll(async () => {
  await db?.close();
  await database?.drop();
});

function context(mode: 'test' | 'live' = 'test'): RequestContext {
  return { accountId: `acct_gw_${++accountSeq}`, mode, permissions: ['*'], requestId: 'req_unit', clock };
}

describe(`gateway configuration through the model on ${DIALECT}`, () => {
  it('should answer the same gateway from create, retrieve and the list page, and keep a deleted one out of all reads', async () => {
    const ctx = context();
    const first = await gateways.create(ctx, { name: 'Zeta', type: 'simulator', currencies: ['usd', 'eur'], enabled: false, settings: { latencyMs: 5 } });
    clock.advance(1);
    const second = await gateways.create(ctx, { name: 'Alpha', type: 'simulator' });
    expect(first).toEqual({
      id: first.id, object: 'gateway', livemode: false, name: 'Zeta', type: 'simulator', enabled: false, currencies: ['USD', 'EUR'],
      settings: { latencyMs: 5 }, credentialsSet: false, createdAt: '2024-05-06T07:08:09.123Z', updatedAt: '2024-05-06T07:08:09.123Z',
    });
    expect(changes).toHaveLength(2);
    expect(await gateways.retrieve(ctx, first.id)).toEqual(first);
    // The list page still reads raw rows: model writes must sort and decode the same way.
    expect((await gateways.list(ctx, {})).data).toEqual([second, first]);
    expect((await gateways.list(ctx, { sortField: 'name', sortDirection: 'asc' })).data).toEqual([second, first]);
    expect((await gateways.list(ctx, { enabled: 'false' })).data).toEqual([first]);
    expect(await gateways.routable(ctx)).toEqual([
      { id: first.id, type: 'simulator', enabled: false, currencies: ['USD', 'EUR'] },
      { id: second.id, type: 'simulator', enabled: true, currencies: null },
    ]);

    clock.advance(1000);
    const removed = await gateways.remove(ctx, first.id);
    expect(removed).toEqual({ ...first, enabled: false, updatedAt: '2024-05-06T07:08:10.124Z' });
    await expect(gateways.retrieve(ctx, first.id)).rejects.toMatchObject({ code: 'resource_not_found' });
    await expect(gateways.remove(ctx, first.id)).rejects.toMatchObject({ code: 'resource_not_found' });
    expect((await gateways.list(ctx, {})).data).toEqual([second]);
    expect((await gateways.routable(ctx)).map((g) => g.id)).toEqual([second.id]);
    // Deleted gateways still refund: the connector reads them.
    expect((await gateways.connector(ctx, first.id)).type).toBe('simulator');
    // Another account's gateway is not there at all.
    await expect(gateways.retrieve(context(), second.id)).rejects.toMatchObject({ code: 'resource_not_found' });
  });

  it('should write only what a PATCH sends, move updatedAt only when something changed and rebuild the connector after', async () => {
    const ctx = context();
    const created = await gateways.create(ctx, { name: 'Sim', type: 'simulator', settings: { outage: true } });
    const before = await gateways.connector(ctx, created.id);
    changes = [];
    clock.advance(5);
    expect(await gateways.update(ctx, created.id, {})).toEqual(created);
    expect(changes).toEqual([]);
    expect((await gateways.connector(ctx, created.id)).gateway).toBe(before.gateway);

    const updated = await gateways.update(ctx, created.id, { name: 'Sim 2', currencies: ['gbp'], settings: { outage: false } });
    expect(updated).toEqual({ ...created, name: 'Sim 2', currencies: ['GBP'], settings: { outage: false }, updatedAt: clock.now().toISOString() });
    expect(await gateways.retrieve(ctx, created.id)).toEqual(updated);
    expect(changes).toHaveLength(1);
    expect((await gateways.connector(ctx, created.id)).gateway).not.toBe(before.gateway);

    clock.advance(5);
    const cleared = await gateways.update(ctx, created.id, { currencies: null, enabled: false });
    expect(cleared).toMatchObject({ name: 'Sim 2', currencies: null, enabled: false, updatedAt: clock.now().toISOString() });
    expect((await gateways.list(ctx, {})).data).toEqual([cleared]);
    await expect(gateways.update(ctx, 'gw_missing', { name: 'x' })).rejects.toMatchObject({ code: 'resource_not_found' });
    await expect(gateways.update(ctx, created.id, { settings: { bogus: 1 } })).rejects.toMatchObject({ code: 'unknown_parameter', param: 'settings.bogus' });
  });

  it('should check a new base URL against the settings a concurrent update just committed, not the ones it read before', async () => {
    const ctx = context();
    const created = await gateways.create(ctx, {
      name: 'Fake Stripe', type: 'stripe', credentials: { secretKey: 'sk_test_abcdefghijklmnop' }, settings: { baseUrl: 'https://93.184.216.34:9/' },
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => {
      locked = resolve;
    });
    // Another writer holds the gateway and moves its base URL (with new credentials).
    const other = db.transaction(async (t) => {
      await db.select(`SELECT id FROM gateways WHERE id = $1${db.forUpdate}`, [created.id], t);
      locked();
      await held;
      await db.execute(`UPDATE gateways SET settings = '{"baseUrl":"https://93.184.216.35:9/"}' WHERE id = $1`, [created.id], t);
    });
    await lockTaken;
    // Sends the old base URL back without credentials: no change against what it would read now,
    // a move back (the new credentials to the old host) against what the other writer commits.
    // Once it opens its transaction, the update has read all it reads outside the lock (the
    // gateway's type, the address check) and waits for the other writer.
    const opened = jest.spyOn(db, 'transaction');
    const patch = gateways.update(ctx, created.id, { settings: { baseUrl: 'https://93.184.216.34:9/' } });
    try {
      await waitFor(() => opened.mock.calls.length >= 1, { what: 'the update to open its transaction' });
    } finally {
      opened.mockRestore();
    }
    release();
    await other;
    await expect(patch).rejects.toMatchObject({ code: 'missing_parameter', param: 'credentials' });
    expect((await gateways.retrieve(ctx, created.id)).settings).toEqual({ baseUrl: 'https://93.184.216.35:9/' });
  });

  it('should take an http base URL to a loopback emulator in test mode only, and nowhere else', async () => {
    const stripe = (baseUrl: string, secretKey = 'sk_test_abcdefghijklmnop') => ({ name: 'Emulator', type: 'stripe', credentials: { secretKey }, settings: { baseUrl } });
    const ctx = context('test');
    const gateways = emulatorGateways;
    const created = await gateways.create(ctx, stripe('http://127.0.0.1:12111'));
    expect(created.settings).toEqual({ baseUrl: 'http://127.0.0.1:12111' });
    expect((await gateways.connector(ctx, created.id)).type).toBe('stripe');
    const moved = await gateways.update(ctx, created.id, { credentials: { secretKey: 'sk_test_abcdefghijklmnop' }, settings: { baseUrl: 'http://localhost:12111' } });
    expect(moved.settings).toEqual({ baseUrl: 'http://localhost:12111' });

    for (const baseUrl of ['http://api.stripe.com', 'http://10.1.2.3:12111']) {
      await expect(gateways.create(ctx, stripe(baseUrl))).rejects.toMatchObject({ code: 'invalid_parameter', param: 'settings.baseUrl' });
    }
    // A live Stripe key never crosses in clear, even to loopback, nor by changing the key alone.
    await expect(gateways.create(ctx, stripe('http://127.0.0.1:12111', 'sk_live_abcdefghijklmnop'))).rejects.toMatchObject({ code: 'invalid_parameter', param: 'settings.baseUrl' });
    await expect(gateways.update(ctx, created.id, { credentials: { secretKey: 'sk_live_abcdefghijklmnop' } })).rejects.toMatchObject({ code: 'invalid_parameter', param: 'settings.baseUrl' });
    await expect(gateways.create(context('live'), stripe('http://127.0.0.1:12111'))).rejects.toMatchObject({ code: 'invalid_parameter', param: 'settings.baseUrl' });
  });

  const INTERNAL_BASE_URLS = [
    'http://127.0.0.1:12111/admin/delete-everything', 'https://127.0.0.1:9/', 'https://[::1]:9/', 'https://localhost:9/', 'https://169.254.169.254/latest',
    'https://10.0.0.5:6443/', 'https://192.168.1.10/', 'https://[fd00::1]/', 'https://100.64.0.1/', 'https://internal.example/',
  ];

  it.each(INTERNAL_BASE_URLS)('should refuse the base URL %s (loopback, link-local, private) unless GATEWAY_ALLOW_PRIVATE_BASE_URL is set', async (baseUrl) => {
    const input = { name: 'Stripe', type: 'stripe', credentials: { secretKey: 'sk_test_abcdefghijklmnop' }, settings: { baseUrl } };
    const ctx = context('test');
    await expect(gateways.create(ctx, input)).rejects.toMatchObject({
      code: 'invalid_parameter', param: 'settings.baseUrl', message: expect.stringMatching(/GATEWAY_ALLOW_PRIVATE_BASE_URL=true/),
    });
    const proxied = await gateways.create(ctx, { ...input, settings: { baseUrl: 'https://stripe-proxy.example/stripe' } });
    await expect(gateways.update(ctx, proxied.id, { credentials: input.credentials, settings: { baseUrl } })).rejects.toMatchObject({ param: 'settings.baseUrl' });
    expect((await gateways.retrieve(ctx, proxied.id)).settings).toEqual({ baseUrl: 'https://stripe-proxy.example/stripe' });
    expect((await gateways.list(ctx, {})).total).toBe(1);

    expect((await emulatorGateways.create(ctx, input)).settings).toEqual({ baseUrl });
  });
});
