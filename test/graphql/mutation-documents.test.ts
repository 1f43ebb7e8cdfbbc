import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import type { HttpResponse } from '../helpers/http';

/**
 * Documents holding several mutations, however they are written (aliases, fragments, inline
 * fragments): each mutation has its own Idempotency-Key, the document's arguments are checked
 * before any of them runs, and each counts against the account's rate limit.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const newKey = (label: string) => `gql-${label}-${randomBytes(6).toString('hex')}`;

const gql = (key: string, query: string, variables: Record<string, unknown> = {}, idem?: string): Promise<HttpResponse> =>
  app.request('POST', '/graphql', { key, body: { query, variables }, headers: idem ? { 'Idempotency-Key': idem } : {} });

async function paymentsOf(key: string): Promise<Array<{ id: string; amount: number; amountRefunded: number }>> {
  const res = await app.request('GET', '/v1/payments?pageSize=100', { key });
  expect(res.status).toBe(200);
  return res.body.data;
}

async function refundsOf(key: string, paymentId: string): Promise<Array<{ id: string; amount: number }>> {
  const res = await app.request('GET', `/v1/payments/${paymentId}/refunds`, { key });
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('mutations inside fragments with one Idempotency-Key', () => {
  it('should make two refunds of two aliased refundPayment in a fragment, and replay both on a retry', async () => {
    const { testKey: key } = await app.createAccount();
    const paid = await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const query = `mutation($p: ID!) { ...R }
      fragment R on Mutation { a: refundPayment(paymentId: $p, amount: 250) { id amount } b: refundPayment(paymentId: $p, amount: 250) { id amount } }`;
    const idem = newKey('fragment-refunds');
    const first = await gql(key, query, { p: paid.body.data.id }, idem);
    expect(first.body.errors).toBeUndefined();
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const { a, b } = first.body.data;
    expect(a.id).not.toBe(b.id);
    expect((await refundsOf(key, paid.body.data.id)).map((r) => r.id).sort()).toEqual([a.id, b.id].sort());

    const retried = await gql(key, query, { p: paid.body.data.id }, idem);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.body).toEqual(first.body);
    expect(await refundsOf(key, paid.body.data.id)).toHaveLength(2);
    expect((await paymentsOf(key))[0].amountRefunded).toBe(500);
  });

  it('should make two charges of two createPayment spread from fragments and inline fragments, and replay both', async () => {
    const { testKey: key } = await app.createAccount();
    const documents = [
      `mutation { ...P }
       fragment P on Mutation { a: createPayment(input: { amount: 501, currency: "usd", paymentMethod: "pm_card_visa" }) { id amount }
                                b: createPayment(input: { amount: 501, currency: "usd", paymentMethod: "pm_card_visa" }) { id amount } }`,
      `mutation { ... on Mutation { a: createPayment(input: { amount: 502, currency: "usd", paymentMethod: "pm_card_visa" }) { id amount } }
                  ... { b: createPayment(input: { amount: 502, currency: "usd", paymentMethod: "pm_card_visa" }) { id amount } } }`,
    ];
    const made: string[] = [];
    for (const [i, query] of documents.entries()) {
      const idem = newKey(`fragment-payments-${i}`);
      const first = await gql(key, query, {}, idem);
      expect(first.body.errors).toBeUndefined();
      const { a, b } = first.body.data;
      expect(a.id).not.toBe(b.id);
      made.push(a.id, b.id);
      const retried = await gql(key, query, {}, idem);
      expect(retried.headers['idempotent-replayed']).toBe('true');
      expect(retried.body).toEqual(first.body);
    }
    expect((await paymentsOf(key)).map((p) => p.id).sort()).toEqual(made.sort());
  });

  it('should keep the plain key for one mutation spread from a fragment, as REST and a bare mutation do', async () => {
    const { testKey: key } = await app.createAccount();
    const idem = newKey('fragment-one');
    const spread = await gql(key, 'mutation { ...P } fragment P on Mutation { createPayment(input: { amount: 503, currency: "usd", paymentMethod: "pm_card_visa" }) { id } }', {}, idem);
    expect(spread.body.errors).toBeUndefined();
    const bare = await gql(key, 'mutation { createPayment(input: { amount: 503, currency: "usd", paymentMethod: "pm_card_visa" }) { id } }', {}, idem);
    expect(bare.headers['idempotent-replayed']).toBe('true');
    expect(bare.body.data.createPayment.id).toBe(spread.body.data.createPayment.id);
    expect(await paymentsOf(key)).toHaveLength(1);
  });
});
