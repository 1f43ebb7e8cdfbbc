import { readJson, readTime } from '../../../src/db/database';
import { AccountStore } from '../../../src/modules/accounts/account.store';
import { hashApiKey } from '../../../src/modules/accounts/account.service';
import { GatewayStore } from '../../../src/modules/gateways/gateway.store';
import { DIALECT } from '../../helpers/db';
import { startServices, type ServiceHarness, type TestAccountContexts } from '../../helpers/services';

let h: ServiceHarness;
let accounts: AccountStore;
let gateways: GatewayStore;
let a: TestAccountContexts;
let b: TestAccountContexts;

beforeAll(async () => {
  h = await startServices();
  accounts = new AccountStore(h.services.db);
  gateways = new GatewayStore(h.services.db);
  a = await h.account();
  b = await h.account();
});
afterAll(() => h?.stop());

describe(`AccountStore on ${DIALECT}`, () => {
  it('should look a key up by its hash with its account, mode, permissions and the account\'s current rate limit', async () => {
    const created = await h.services.accounts.createAccount({ name: 'Store test', rateLimitPerMinute: 120 });
    const live = await accounts.lookupKey(hashApiKey(created.liveKey.secret as string));
    expect(live).toMatchObject({ id: created.liveKey.id, account_id: created.accountId, mode: 'live', revoked_at: null, rate_limit_per_minute: 120 });
    expect(readJson(live?.permissions, [])).toEqual(['*']);
    expect(await accounts.lookupKey(hashApiKey(created.testKey.secret as string))).toMatchObject({ id: created.testKey.id, mode: 'test' });
    await h.services.accounts.setRateLimit(created.accountId, 7);
    expect((await accounts.lookupKey(hashApiKey(created.liveKey.secret as string)))?.rate_limit_per_minute).toBe(7);
  });

  it('should return a revoked key with its revocation time, and nothing for an unknown hash', async () => {
    const created = await h.services.accounts.createAccount({ name: 'Store test' });
    const ctx = { ...a.test, accountId: created.accountId };
    const key = await h.services.accounts.createKey(ctx, { permissions: ['payments:read'] });
    const before = await accounts.lookupKey(hashApiKey(key.secret as string));
    expect(before).toMatchObject({ id: key.id, revoked_at: null });
    expect(readJson(before?.permissions, [])).toEqual(['payments:read']);
    await h.services.accounts.revokeKey(ctx, key.id);
    expect(readTime((await accounts.lookupKey(hashApiKey(key.secret as string)))?.revoked_at)).toEqual(h.clock.now());
    expect(await accounts.lookupKey(hashApiKey(`${key.secret}x`))).toBeNull();
  });

  it('should list only the keys of the account and mode asked for', async () => {
    const input = { page: 1, pageSize: 100, sortField: 'createdAt' as const, sortDirection: 'asc' as const };
    h.clock.advance(1_000);
    const extra = await h.services.accounts.createKey(b.test, { name: 'extra' });
    const ids = async (ctx: typeof a.test) => (await accounts.listKeys(ctx, input, (row) => row.id)).data;
    expect(await ids(b.test)).toEqual([b.test.keyId, extra.id]);
    expect(await ids(b.live)).toEqual([b.live.keyId]);
    expect(await ids(a.test)).not.toContain(extra.id);
  });
});

describe(`GatewayStore on ${DIALECT}`, () => {
  it('should read a gateway for its connector only in its own account and mode, deleted ones included', async () => {
    const gw = await h.services.gateways.create(a.test, { name: 'Sim', type: 'simulator', settings: { latencyMs: 3 }, currencies: ['eur'] });
    const row = await gateways.forConnector(a.test, gw.id);
    expect(row).toMatchObject({ id: gw.id, mode: 'test', name: 'Sim', type: 'simulator', credentials_sealed: null });
    expect(readJson(row?.settings, {})).toEqual({ latencyMs: 3 });
    expect(readTime(row?.updated_at)?.toISOString()).toBe(gw.updatedAt);
    expect(await gateways.forConnector(b.test, gw.id)).toBeNull();
    expect(await gateways.forConnector(a.live, gw.id)).toBeNull();
    expect(await gateways.forConnector(a.test, 'gw_unknown')).toBeNull();
    // The connector cache keys on updated_at: a change must show in it.
    h.clock.advance(1_000);
    await h.services.gateways.update(a.test, gw.id, { name: 'Renamed' });
    expect(readTime((await gateways.forConnector(a.test, gw.id))?.updated_at)).toEqual(h.clock.now());
    // Payments captured through a deleted gateway are still refunded through it.
    await h.services.gateways.remove(a.test, gw.id);
    expect(await gateways.forConnector(a.test, gw.id)).toMatchObject({ id: gw.id, name: 'Renamed' });
  });

  it('should list only live gateways of the account and mode, filtered', async () => {
    const on = await h.services.gateways.create(b.live, { name: 'On', type: 'simulator' });
    const off = await h.services.gateways.create(b.live, { name: 'Off', type: 'simulator', enabled: false });
    const gone = await h.services.gateways.create(b.live, { name: 'Gone', type: 'simulator' });
    await h.services.gateways.remove(b.live, gone.id);
    const input = { page: 1, pageSize: 100, sortField: 'name' as const, sortDirection: 'asc' as const };
    expect((await gateways.list(b.live, input, (r) => r.id)).data).toEqual([off.id, on.id]);
    expect((await gateways.list(b.live, { ...input, enabled: true }, (r) => r.id)).data).toEqual([on.id]);
    expect((await gateways.list(b.test, input, (r) => r.id)).total).toBe(0);
    expect((await gateways.list(a.live, input, (r) => r.id)).total).toBe(0);
  });
});
