import { startTestApp, type TestApp } from '../helpers/app';

// The catalog and customer lists' filters, each narrowing what the others let through.
let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

const post = async (path: string, body: unknown) => {
  const res = await app.request('POST', path, { key, body });
  expect(res.status).toBe(201);
  return res.body.data as { id: string };
};
const list = async (path: string) => {
  const res = await app.request('GET', path, { key });
  expect(res.status).toBe(200);
  return res.body as { data: { id: string; name?: string; nickname?: string }[]; meta: { total: number } };
};

describe('catalog and customer list filters', () => {
  it('should filter products by active and search name and description literally, and sort by name', async () => {
    await post('/v1/products', { name: 'Beta plan', description: 'Save 100% today' });
    await post('/v1/products', { name: 'Alpha plan', description: 'Save 1000 today' });
    await post('/v1/products', { name: 'Gamma plan', active: false });
    expect((await list('/v1/products?active=false')).data.map((p) => p.name)).toEqual(['Gamma plan']);
    expect((await list('/v1/products?active=true&sortField=name&sortDirection=asc')).data.map((p) => p.name)).toEqual(['Alpha plan', 'Beta plan']);
    const percent = await list(`/v1/products?search=${encodeURIComponent('100%')}`);
    expect(percent.data.map((p) => p.name)).toEqual(['Beta plan']);
    expect(percent.meta.total).toBe(1);
    expect((await list('/v1/products?search=GAMMA')).data.map((p) => p.name)).toEqual(['Gamma plan']);
  });

  it('should filter prices by product, currency, type and active, and sort by amount', async () => {
    const product = await post('/v1/products', { name: 'Priced' });
    const other = await post('/v1/products', { name: 'Other' });
    const price = (body: object) => post('/v1/prices', { productId: product.id, currency: 'EUR', ...body });
    await price({ unitAmount: 900, nickname: 'once-900' });
    await price({ unitAmount: 500, nickname: 'monthly-500', recurring: { interval: 'month' } });
    await price({ unitAmount: 700, nickname: 'usd-700', currency: 'USD' });
    await price({ unitAmount: 100, nickname: 'retired-100', active: false });
    await post('/v1/prices', { productId: other.id, unitAmount: 300, currency: 'EUR', nickname: 'other-300' });
    const nicknames = async (query: string) => (await list(`/v1/prices?productId=${product.id}&${query}`)).data.map((p) => p.nickname);
    expect(await nicknames('sortField=amount&sortDirection=asc')).toEqual(['retired-100', 'monthly-500', 'usd-700', 'once-900']);
    expect(await nicknames('sortField=unitAmount&sortDirection=desc&active=true')).toEqual(['once-900', 'usd-700', 'monthly-500']);
    expect(await nicknames('type=recurring')).toEqual(['monthly-500']);
    expect(await nicknames('type=one_time&currency=EUR&sortField=amount')).toEqual(['once-900', 'retired-100']);
    expect((await list(`/v1/prices?productId=${other.id}`)).data.map((p) => p.nickname)).toEqual(['other-300']);
  });

  it('should filter customers by e-mail case-insensitively and search literally', async () => {
    await post('/v1/customers', { email: 'o.brien@example.com', name: `Ann O'Brien` });
    await post('/v1/customers', { email: 'obrien@example.com', name: 'Ann OBrien' });
    const byEmail = await list('/v1/customers?email=O.Brien@Example.com');
    expect(byEmail.data.map((c) => c.name)).toEqual([`Ann O'Brien`]);
    expect((await list(`/v1/customers?search=${encodeURIComponent(`o'brien`)}`)).data.map((c) => c.name)).toEqual([`Ann O'Brien`]);
    expect((await list('/v1/customers?search=o_brien')).meta.total).toBe(0);
  });
});
