import { startTestApp, type TestApp } from '../helpers/app';
import type { RequestOptions } from '../helpers/http';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';

/**
 * Issue 31: the caps on failed public pays hold across instances sharing one database. Declines
 * sent at once to two instances (this process and a spawned one, both on the system clock) stay
 * within each cap, however they are split.
 */

let app: TestApp;
let other: SpawnedInstance;
beforeAll(async () => {
  app = await startTestApp();
  other = await spawnBeside(app);
}, 90_000);
afterAll(async () => {
  await other?.stop();
  await app?.stop();
});

const declined = { card: { number: '4000000000000002', expMonth: 12, expYear: 2034, cvc: '123' } };
const from = (n: number): RequestOptions => ({ localAddress: `127.0.0.${n}`, body: declined });

describe('the caps on failed public pays, on two instances', () => {
  it('should let no more than 5 declines of one link from one address through, split across both instances', async () => {
    const account = await app.createAccount();
    const link = (await app.request('POST', '/v1/payment-links', { key: account.testKey, body: { name: 'Two', amount: 100, currency: 'usd' } })).body.data;
    const path = `/v1/public/payment-links/${link.slug}/pay`;
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? other : app).request('POST', path, from(100))));
    // A burst may be refused early (attempts still running count), never let through past the cap.
    const processed = results.filter((r) => r.status === 200);
    expect(processed.length).toBeLessThanOrEqual(5);
    expect(results.filter((r) => r.status === 429 && r.body.error.code === 'too_many_attempts')).toHaveLength(16 - processed.length);
    // Every decline let through is a payment; none of the refused ones reached a gateway.
    const payments = (await app.request('GET', '/v1/payments?pageSize=100', { key: account.testKey })).body.data;
    expect(payments.filter((p: { paymentLinkId: string }) => p.paymentLinkId === link.id)).toHaveLength(processed.length);
    // Sequentially, the cap is reached exactly: whatever is left of the five, then refused on either instance.
    for (let i = processed.length; i < 5; i++) expect((await (i % 2 ? other : app).request('POST', path, from(100))).status).toBe(200);
    expect((await app.request('POST', path, from(100))).status).toBe(429);
    expect((await other.request('POST', path, from(100))).status).toBe(429);
  });

  it('should hold the account\'s publicDeclinesPerHour across both instances, with one event', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    await app.request('PATCH', '/v1/account', { key, body: { publicDeclinesPerHour: 4 } });
    const links = await Promise.all([1, 2, 3, 4, 5, 6].map(async (i) => (await app.request('POST', '/v1/payment-links', { key, body: { name: `L${i}`, amount: 100, currency: 'usd' } })).body.data));
    // Twelve declines at once, over six links and twelve addresses, half on each instance.
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      (i % 2 ? other : app).request('POST', `/v1/public/payment-links/${links[i % 6].slug}/pay`, from(110 + i))));
    const processed = results.filter((r) => r.status === 200);
    expect(processed.length).toBeLessThanOrEqual(4);
    expect(results.filter((r) => r.status === 429)).toHaveLength(12 - processed.length);
    for (let i = processed.length; i < 4; i++) expect((await app.request('POST', `/v1/public/payment-links/${links[0].slug}/pay`, from(130 + i))).status).toBe(200);
    const after = await Promise.all([app, other, app, other].map((instance, i) => instance.request('POST', `/v1/public/payment-links/${links[1].slug}/pay`, from(140 + i))));
    expect(after.map((r) => r.body.error?.code)).toEqual(Array(4).fill('too_many_attempts'));
    const events = (await app.request('GET', '/v1/events?type=account.public_declines_exceeded', { key })).body.data;
    expect(events).toHaveLength(1);
  });
});
