import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { collect, wsClientAt, type Collected } from '../helpers/live-events';
import { assertStaysTrue, waitFor, watchStreams } from '../helpers/wait';
import type { Client } from 'graphql-ws';

/**
 * Live fan-out at scale: the nested fields of a subscription's payload (a payment's customer and
 * refunds) are read once per event for every subscriber of the account and mode it goes to, not
 * once per subscriber: 50 subscribers of one account cost a handful of statements per payment
 * update, not one per subscriber and field. Subscribers of another account, or with other
 * permissions, never share what was read.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const PAYMENTS = 'subscription { paymentUpdated { id customer { id } refunds { id } } }';
type Update = { id: string; customer: { id: string } | null; refunds: Array<{ id: string }> | null };
const pick = (data: Record<string, any>) => data.paymentUpdated as Update;

/** A customer's payment with two refunds, on `account`'s test mode. */
async function paymentWithRefunds(account: TestAccount) {
  const key = account.testKey;
  const customer = await app.request('POST', '/v1/customers', { key, body: { email: `fanout-${account.accountId}@example.com` } });
  const payment = await app.request('POST', '/v1/payments', { key, body: { amount: 5000, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.body.data.id } });
  expect(payment.status).toBe(201);
  const refunds: string[] = [];
  for (const amount of [300, 400]) refunds.push((await app.request('POST', `/v1/payments/${payment.body.data.id}/refunds`, { key, body: { amount } })).body.data.id);
  return { customerId: customer.body.data.id as string, paymentId: payment.body.data.id as string, refunds: refunds.reverse() };
}

const update = async (account: TestAccount, paymentId: string, description: string) => {
  const res = await app.request('PATCH', `/v1/payments/${paymentId}`, { key: account.testKey, body: { description } });
  expect(res.status).toBe(200);
};

describe('paymentUpdated to many subscribers', () => {
  it('should read a payment update\'s customer and refunds once for 50 subscribers of the account, each getting them, and nothing across accounts', async () => {
    const a = await app.createAccount();
    const b = await app.createAccount();
    const payA = await paymentWithRefunds(a);
    const payB = await paymentWithRefunds(b);

    // What one update costs with nobody subscribed.
    let before = app.sql.length;
    await update(a, payA.paymentId, 'nobody listens');
    const alone = app.sql.length - before;

    const streams = watchStreams(app.server.services.bus);
    const clients: Client[] = [];
    const subscribers: Array<Collected<Update>> = [];
    let otherAccount: Collected<Update>;
    try {
      // Five sockets of ten subscriptions each, and one subscriber of another account.
      for (let s = 0; s < 5; s++) {
        const client = wsClientAt(app.baseUrl, app.server.cert, a.testKey);
        clients.push(client);
        for (let i = 0; i < 10; i++) subscribers.push(collect(client, PAYMENTS, {}, pick));
      }
      const clientB = wsClientAt(app.baseUrl, app.server.cert, b.testKey);
      clients.push(clientB);
      otherAccount = collect(clientB, PAYMENTS, {}, pick);
      await waitFor(() => streams.opened() === 51, { what: '51 subscriptions to start' });

      before = app.sql.length;
      await update(a, payA.paymentId, 'fifty listen');
      await waitFor(() => subscribers.every((s) => s.items.length === 1), { what: 'every subscriber to get the update' });
      const withSubscribers = app.sql.slice(before);
      // The update's own statements, and one read of the customer and one of the refunds for all 50.
      expect(withSubscribers.length - alone).toBeLessThanOrEqual(4);
      expect(withSubscribers.filter((q) => /FROM\s+"?customers"?/i.test(q) && !/UPDATE/i.test(q)).length).toBeLessThanOrEqual(1);
      expect(withSubscribers.filter((q) => /FROM\s+"?refunds"?/i.test(q)).length).toBeLessThanOrEqual(1);
      for (const s of subscribers) {
        expect(s.errors).toEqual([]);
        expect(s.items).toEqual([{ id: payA.paymentId, customer: { id: payA.customerId }, refunds: payA.refunds.map((id) => ({ id })) }]);
      }
      // The other account's subscriber heard nothing of it...
      await assertStaysTrue(() => otherAccount.items.length === 0, 300, 'another account\'s subscriber gets nothing');
      // ...and gets its own account's payment, customer and refunds, which none of the 50 get.
      await update(b, payB.paymentId, 'the other account');
      await waitFor(() => otherAccount.items.length === 1, { what: 'the other account\'s update' });
      expect(otherAccount.items).toEqual([{ id: payB.paymentId, customer: { id: payB.customerId }, refunds: payB.refunds.map((id) => ({ id })) }]);
      await assertStaysTrue(() => subscribers.every((s) => s.items.length === 1), 200, 'the 50 get nothing of the other account');
    } finally {
      streams.stop();
      for (const client of clients) await client.dispose();
    }
  });

  it('should not share what one key may read with a key of the same account that may not read it', async () => {
    const a = await app.createAccount();
    const pay = await paymentWithRefunds(a);
    const restricted = await app.request('POST', '/v1/api-keys', { key: a.testKey, body: { name: 'no refunds', permissions: ['payments:read', 'customers:read'] } });
    expect(restricted.status).toBe(201);
    const streams = watchStreams(app.server.services.bus);
    const full = wsClientAt(app.baseUrl, app.server.cert, a.testKey);
    const narrow = wsClientAt(app.baseUrl, app.server.cert, restricted.body.data.secret);
    try {
      const fullSubscribers = Array.from({ length: 3 }, () => collect(full, PAYMENTS, {}, pick));
      const narrowSubscriber = collect(narrow, PAYMENTS, {}, pick);
      await waitFor(() => streams.opened() === 4, { what: 'four subscriptions to start' });
      await update(a, pay.paymentId, 'two keys listen');
      await waitFor(() => [...fullSubscribers, narrowSubscriber].every((s) => s.items.length === 1), { what: 'every subscriber to get the update' });
      for (const s of fullSubscribers) expect(s.items[0].refunds).toEqual(pay.refunds.map((id) => ({ id })));
      expect(narrowSubscriber.items[0]).toEqual({ id: pay.paymentId, customer: { id: pay.customerId }, refunds: null });
      expect(narrowSubscriber.errors[0]).toEqual([expect.objectContaining({ path: ['paymentUpdated', 'refunds'], extensions: expect.objectContaining({ code: 'permission_denied' }) })]);
    } finally {
      streams.stop();
      await full.dispose();
      await narrow.dispose();
    }
  });
});
