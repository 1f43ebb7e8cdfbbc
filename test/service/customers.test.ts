import type { RequestContext } from '../../src/core/context';
import { START, refusal, startServices, withPermissions, type ServiceHarness } from '../helpers/services';

let h: ServiceHarness;
let ctx: RequestContext;
beforeAll(async () => {
  h = await startServices();
  ctx = (await h.account()).test;
});
afterAll(() => h?.stop());

const unique = () => `c${Math.random().toString(36).slice(2, 10)}@example.com`;

describe('CustomerService.create', () => {
  it('should create a customer with normalised fields, stamped by the injected clock', async () => {
    h.clock.set(new Date('2026-11-02T08:00:00.000Z'));
    const customer = await h.services.customers.create(ctx, { email: ' Jane@Example.com ', name: 'Jane', country: 'de', phone: '+49 30 123456', metadata: { plan: 'gold' } });
    expect(customer).toEqual({
      id: expect.stringMatching(/^cus_/), object: 'customer', livemode: false, email: 'Jane@Example.com', name: 'Jane', country: 'DE',
      phone: '+49 30 123456', defaultPaymentMethodId: null, testClockId: null, locale: 'en', metadata: { plan: 'gold' }, creditBalance: {},
      address: null, taxIds: [], taxExempt: 'none', createdAt: '2026-11-02T08:00:00.000Z', updatedAt: '2026-11-02T08:00:00.000Z',
    });
    expect(await h.services.customers.retrieve(ctx, customer.id)).toEqual(customer);
  });

  it.each([
    [{}, 'missing_parameter', 'email'],
    [{ email: 'not-an-email' }, 'invalid_parameter', 'email'],
    [{ email: 42 }, 'invalid_parameter', 'email'],
    [{ email: 'a@b.co', country: 'DEU' }, 'invalid_parameter', 'country'],
    [{ email: 'a@b.co', phone: 'call me' }, 'invalid_parameter', 'phone'],
    [{ email: 'a@b.co', nickname: 'x' }, 'unknown_parameter', 'nickname'],
    [{ email: 'a@b.co', metadata: 'x' }, 'invalid_parameter', 'metadata'],
    [{ email: 'a@b.co', metadata: { k: 1 } }, 'invalid_parameter', 'metadata.k'],
    [{ email: 'a@b.co', metadata: { k: 'v'.repeat(501) } }, 'invalid_parameter', 'metadata.k'],
    [{ email: 'a@b.co', metadata: { ['k'.repeat(41)]: 'v' } }, 'invalid_parameter', `metadata.${'k'.repeat(41)}`],
    [{ email: 'a@b.co', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'invalid_parameter', 'metadata'],
    [{ email: 'a@b.co', name: 'x\u0000y' }, 'invalid_parameter', 'name'],
  ])('should refuse %j with 400 %s naming %s', async (input, code, param) => {
    const before = (await h.services.customers.list(ctx, {})).total;
    expect(await refusal(h.services.customers.create(ctx, input))).toEqual({ code, param, status: 400 });
    expect((await h.services.customers.list(ctx, {})).total).toBe(before);
  });

  it('should refuse an e-mail another customer has, whatever its case, with 409 duplicate_email', async () => {
    const email = unique();
    await h.services.customers.create(ctx, { email });
    expect(await refusal(h.services.customers.create(ctx, { email: email.toUpperCase() }))).toEqual({ code: 'duplicate_email', param: 'email', status: 409 });
    // Another account, or the other mode, is another namespace.
    expect((await h.services.customers.create((await h.account()).test, { email })).email).toBe(email);
    expect((await h.services.customers.create({ ...ctx, mode: 'live' }, { email })).livemode).toBe(true);
  });

  it('should refuse a key without customers:write with 403 permission_denied', async () => {
    const readOnly = withPermissions(ctx, ['customers:read']);
    expect(await refusal(h.services.customers.create(readOnly, { email: unique() }))).toMatchObject({ code: 'permission_denied', status: 403 });
  });

  it('should record customer.created with the customer as returned', async () => {
    const own = (await h.account()).test;
    const customer = await h.services.customers.create(own, { email: unique() });
    const events = await h.services.events.list(own, { type: 'customer.created' });
    expect(events.data).toHaveLength(1);
    expect(events.data[0]).toMatchObject({ type: 'customer.created', data: { object: customer } });
  });
});

describe('CustomerService.update', () => {
  it('should merge metadata: new keys added, given keys replaced, null removes, others kept', async () => {
    const c = await h.services.customers.create(ctx, { email: unique(), metadata: { plan: 'gold', region: 'eu' } });
    const added = await h.services.customers.update(ctx, c.id, { metadata: { tier: '2', plan: 'platinum' } });
    expect(added.metadata).toEqual({ plan: 'platinum', region: 'eu', tier: '2' });
    const removed = await h.services.customers.update(ctx, c.id, { metadata: { region: null, absent: null } });
    expect(removed.metadata).toEqual({ plan: 'platinum', tier: '2' });
    expect((await h.services.customers.retrieve(ctx, c.id)).metadata).toEqual({ plan: 'platinum', tier: '2' });
  });

  it('should refuse a merge that would hold more than 50 keys, naming metadata, and keep the customer as it was', async () => {
    const c = await h.services.customers.create(ctx, { email: unique(), metadata: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`a${i}`, 'v'])) });
    const patch = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`b${i}`, 'v']));
    expect(await refusal(h.services.customers.update(ctx, c.id, { metadata: patch }))).toEqual({ code: 'invalid_parameter', param: 'metadata', status: 400 });
    expect(await h.services.customers.retrieve(ctx, c.id)).toEqual(c);
  });

  it('should change only the fields given, stamping updatedAt with the clock', async () => {
    h.clock.set(START);
    const c = await h.services.customers.create(ctx, { email: unique(), name: 'Before', country: 'fr', phone: '+33 1 23 45 67 89' });
    h.clock.advance(60_000);
    const updated = await h.services.customers.update(ctx, c.id, { name: 'After', phone: null });
    expect(updated).toEqual({ ...c, name: 'After', phone: null, updatedAt: new Date(START.getTime() + 60_000).toISOString() });
  });

  it('should leave a customer, its updatedAt and the event log alone when nothing is given', async () => {
    const own = (await h.account()).test;
    const c = await h.services.customers.create(own, { email: unique() });
    h.clock.advance(60_000);
    expect(await h.services.customers.update(own, c.id, {})).toEqual(c);
    expect((await h.services.events.list(own, { type: 'customer.updated' })).total).toBe(0);
  });

  it.each([
    [{ id: 'cus_other' }, 'unknown_parameter', 'id'],
    [{ email: 'nope' }, 'invalid_parameter', 'email'],
    [{ country: 'Germany' }, 'invalid_parameter', 'country'],
    [{ metadata: { k: 7 } }, 'invalid_parameter', 'metadata.k'],
    [{ metadata: [] }, 'invalid_parameter', 'metadata'],
  ])('should refuse %j with 400 %s naming %s, changing nothing', async (input, code, param) => {
    const c = await h.services.customers.create(ctx, { email: unique() });
    expect(await refusal(h.services.customers.update(ctx, c.id, input))).toEqual({ code, param, status: 400 });
    expect(await h.services.customers.retrieve(ctx, c.id)).toEqual(c);
  });

  it("should refuse another customer's e-mail with 409 duplicate_email", async () => {
    const taken = unique();
    await h.services.customers.create(ctx, { email: taken });
    const other = await h.services.customers.create(ctx, { email: unique() });
    expect(await refusal(h.services.customers.update(ctx, other.id, { email: taken.toUpperCase() }))).toEqual({ code: 'duplicate_email', param: 'email', status: 409 });
  });

  it('should answer 404 resource_not_found for a customer of another account or mode', async () => {
    const c = await h.services.customers.create(ctx, { email: unique() });
    const stranger = (await h.account()).test;
    expect(await refusal(h.services.customers.update(stranger, c.id, { name: 'x' }))).toMatchObject({ code: 'resource_not_found', status: 404 });
    expect(await refusal(h.services.customers.update({ ...ctx, mode: 'live' }, c.id, { name: 'x' }))).toMatchObject({ code: 'resource_not_found', status: 404 });
    expect(await h.services.customers.retrieve(ctx, c.id)).toEqual(c);
  });
});
