import { CatalogStore } from '../../../src/modules/catalog/catalog.store';
import { CustomerStore } from '../../../src/modules/customers/customer.store';
import { startServices, type ServiceHarness, type TestAccountContexts } from '../../helpers/services';

/** CustomerStore's and CatalogStore's list pages on both dialects (`npm test` runs this file on SQLite and PostgreSQL). */
let h: ServiceHarness;
let a: TestAccountContexts;
let b: TestAccountContexts;
let customers: CustomerStore;
let catalog: CatalogStore;
beforeAll(async () => {
  h = await startServices();
  a = await h.account();
  b = await h.account();
  customers = new CustomerStore(h.services.db);
  catalog = new CatalogStore(h.services.db);
});
afterAll(() => h?.stop());

const page = { page: 1, pageSize: 10, sortDirection: 'desc' as const };
const tick = () => h.clock.advance(1000);

describe('CustomerStore', () => {
  it('should list one scope\'s customers newest first, by exact e-mail (any case) or by search text', async () => {
    const made = [];
    for (const [email, name] of [['ann@example.com', 'Ann Lee'], ['bob@example.com', 'Bob Stone'], ['cy@example.com', 'Cy Lee']]) {
      made.push(await h.services.customers.create(a.test, { email, name }));
      tick();
    }
    await h.services.customers.create(b.test, { email: 'ann@example.com', name: 'Ann Lee' });
    await h.services.customers.create(a.live, { email: 'ann@example.com', name: 'Ann Lee' });
    const all = await customers.list(a.test, { ...page, sortField: 'createdAt' });
    expect([all.total, all.data.map((c) => c.id)]).toEqual([3, made.map((c) => c.id).reverse()]);
    // The store reads the customer as stored; the service adds its credit balance (CustomerService.withCredit).
    const { creditBalance: _credit, ...stored } = made[0];
    expect(all.data[2]).toEqual(stored);
    expect((await customers.list(a.test, { ...page, sortField: 'createdAt', email: 'ANN@example.com' })).data.map((c) => c.id)).toEqual([made[0].id]);
    expect((await customers.list(a.test, { ...page, sortField: 'createdAt', search: 'lee' })).data.map((c) => c.id)).toEqual([made[2].id, made[0].id]);
    // LIKE wildcards in the search are literal.
    expect((await customers.list(a.test, { ...page, sortField: 'createdAt', search: '%' })).total).toBe(0);
  });
});

describe('CatalogStore', () => {
  it('should list products by activity and search, and prices by product, type and amount order', async () => {
    const tea = await h.services.catalog.createProduct(a.test, { name: 'Green tea', description: 'loose leaf' });
    tick();
    const mug = await h.services.catalog.createProduct(a.test, { name: 'Mug', active: false });
    tick();
    await h.services.catalog.createProduct(b.test, { name: 'Green tea' });
    expect((await catalog.listProducts(a.test, { ...page, sortField: 'createdAt' })).data.map((p) => p.id)).toEqual([mug.id, tea.id]);
    expect((await catalog.listProducts(a.test, { ...page, sortField: 'createdAt', active: false })).data.map((p) => p.id)).toEqual([mug.id]);
    expect((await catalog.listProducts(a.test, { ...page, sortField: 'name', sortDirection: 'asc', search: 'LEAF' })).data).toEqual([tea]);

    const once = await h.services.catalog.createPrice(a.test, { productId: tea.id, unitAmount: 900, currency: 'usd' });
    tick();
    const monthly = await h.services.catalog.createPrice(a.test, { productId: tea.id, unitAmount: 500, currency: 'usd', recurring: { interval: 'month' } });
    tick();
    const mugPrice = await h.services.catalog.createPrice(a.test, { productId: mug.id, unitAmount: 1500, currency: 'eur' });
    const prices = (input: Record<string, unknown>) =>
      catalog.listPrices(a.test, { ...page, sortField: 'createdAt', ...input }).then((p) => p.data.map((x) => x.id));
    expect(await prices({ productId: tea.id })).toEqual([monthly.id, once.id]);
    expect(await prices({ type: ['recurring'] })).toEqual([monthly.id]);
    expect(await prices({ type: ['one_time'], sortField: 'unitAmount', sortDirection: 'asc' })).toEqual([once.id, mugPrice.id]);
    expect(await prices({ type: ['one_time', 'recurring'] })).toEqual([mugPrice.id, monthly.id, once.id]);
    expect(await prices({ currency: mugPrice.currency })).toEqual([mugPrice.id]);
    expect((await catalog.listPrices(b.test, { ...page, sortField: 'createdAt' })).total).toBe(0);
  });

  it('should give the newest prices of several products at once, at most the limit each, only in scope', async () => {
    const [p1, p2] = [await h.services.catalog.createProduct(a.test, { name: 'P1' }), await h.services.catalog.createProduct(a.test, { name: 'P2' })];
    const p1Prices = [];
    for (const amount of [100, 200, 300]) {
      p1Prices.push(await h.services.catalog.createPrice(a.test, { productId: p1.id, unitAmount: amount, currency: 'usd' }));
      tick();
    }
    const p2Price = await h.services.catalog.createPrice(a.test, { productId: p2.id, unitAmount: 50, currency: 'usd' });
    const nested = await catalog.pricesForProducts(a.test, [p1.id, p2.id, 'prod_missing'], 2);
    expect(nested.get(p1.id)).toEqual([p1Prices[2], p1Prices[1]]);
    expect(nested.get(p2.id)).toEqual([p2Price]);
    expect(nested.get('prod_missing')).toBeUndefined();
    expect((await catalog.pricesForProducts(b.test, [p1.id], 2)).size).toBe(0);
  });
});
