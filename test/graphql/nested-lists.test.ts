import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (key: string, query: string, variables: Record<string, unknown> = {}) =>
  app.request('POST', '/graphql', { key, body: { query, variables } });

/** A customer with `payments` card payments, each refunded `refunds` times. */
async function customerWithPayments(account: TestAccount, payments: number, refunds = 0): Promise<{ customerId: string; paymentIds: string[] }> {
  const key = account.testKey;
  const customer = await app.request('POST', '/v1/customers', { key, body: { email: `nested${Math.random()}@example.com` } });
  const customerId = customer.body.data.id as string;
  const paymentIds: string[] = [];
  for (let i = 0; i < payments; i++) {
    const p = await app.request('POST', '/v1/payments', { key, body: { amount: 1000 + i, currency: 'usd', paymentMethod: 'pm_card_visa', customerId } });
    expect(p.status).toBe(201);
    for (let r = 0; r < refunds; r++) await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.body.data.id, amount: 10 } });
    paymentIds.unshift(p.body.data.id); // newest first, as the lists give them
  }
  return { customerId, paymentIds };
}

const REFUND_FIELDS = 'id object livemode paymentId amount currency reason status gatewayId failureCode failureMessage createdAt updatedAt';
const CALL_FIELDS = 'id object livemode paymentId refundId gatewayId gatewayType kind attempt idempotencyKey outcome code message reference latencyMs request response createdAt updatedAt';

describe('GraphQL nested lists', () => {
  it('should accept a customer → payments → refunds and gateway calls query with the default sizes', async () => {
    const account = await app.createAccount();
    const { customerId, paymentIds } = await customerWithPayments(account, 2, 1);
    const res = await gql(account.testKey, `query($id: ID!) { customer(id: $id) { id email payments { id amount status refunds { ${REFUND_FIELDS} } gatewayTransactions { ${CALL_FIELDS} } } } }`, { id: customerId });
    expect(res.body.errors).toBeUndefined();
    const payments = res.body.data.customer.payments;
    expect(payments.map((p: { id: string }) => p.id)).toEqual(paymentIds);
    for (const p of payments) {
      expect(p.refunds).toHaveLength(1);
      expect(p.gatewayTransactions.map((t: { kind: string }) => t.kind)).toEqual(['refund', 'charge']);
    }
    // The same under a page of customers.
    const page = await gql(account.testKey, `{ customers { nodes { payments { refunds { ${REFUND_FIELDS} } gatewayTransactions { id kind outcome createdAt } } } } }`);
    expect(page.body.errors).toBeUndefined();
  });

  it('should give each parent at most `first` of its newest children (10 unless asked), one statement per size', async () => {
    const account = await app.createAccount();
    const { customerId, paymentIds } = await customerWithPayments(account, 12, 0);
    const refunded = paymentIds[0];
    for (let r = 0; r < 3; r++) await app.request('POST', '/v1/refunds', { key: account.testKey, body: { paymentId: refunded, amount: 10 } });
    const before = app.sql.length;
    const res = await gql(account.testKey, `query($id: ID!) { customer(id: $id) {
      all: payments { id }
      two: payments(first: 2) { id refunds(first: 2) { amount } r1: refunds(first: 1) { amount } }
      most: payments(first: 100) { id }
    } }`, { id: customerId });
    expect(res.body.errors).toBeUndefined();
    const c = res.body.data.customer;
    expect(c.all.map((p: { id: string }) => p.id)).toEqual(paymentIds.slice(0, 10));
    expect(c.two.map((p: { id: string }) => p.id)).toEqual(paymentIds.slice(0, 2));
    expect(c.two[0].refunds).toHaveLength(2);
    expect(c.two[0].r1).toHaveLength(1);
    expect(c.two[1].refunds).toEqual([]);
    expect(c.most).toHaveLength(12);
    // One bounded statement for each size asked, not one per parent.
    const paymentReads = app.sql.slice(before).filter((q) => /\bFROM payments\b/.test(q) && /rank_in_parent|CROSS JOIN LATERAL/.test(q));
    expect(paymentReads).toHaveLength(3);

    for (const first of [0, -1, 101]) {
      const refused = await gql(account.testKey, `query($id: ID!) { customer(id: $id) { payments(first: ${first}) { id } } }`, { id: customerId });
      expect(refused.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'first' });
    }
  });

  it('should cost a nested list by its `first` and name the costliest field when refusing', async () => {
    const account = await app.createAccount();
    const { customerId } = await customerWithPayments(account, 1, 0);
    const nested = (payments: string, calls: string) =>
      `query($id: ID!, $n: Int) { customer(id: $id) { payments${payments} { id refunds(first: $n) { id } gatewayTransactions${calls} { ${CALL_FIELDS} } } } }`;
    expect((await gql(account.testKey, nested('(first: 5)', '(first: 5)'), { id: customerId, n: 2 })).body.errors).toBeUndefined();
    for (const [payments, calls] of [['(first: 100)', '(first: 100)'], ['(first: $n)', '(first: $n)']]) {
      const refused = await gql(account.testKey, nested(payments, calls), { id: customerId, n: 2 });
      expect(refused.status).toBe(400);
      const [error] = refused.body.errors;
      expect(error.extensions.code).toBe('query_too_complex');
      expect(error.message).toMatch(/costliest field is customer\.payments\.gatewayTransactions\b/);
      expect(error.message).toContain('first');
      expect(refused.body.data).toBeUndefined();
    }
    // Aliases name the field as the response does.
    const aliased = await gql(account.testKey, `query($id: ID!) { c: customer(id: $id) { p: payments(first: 100) { id t: gatewayTransactions(first: 100) { ${CALL_FIELDS} } } } }`, { id: customerId });
    expect(aliased.body.errors[0].message).toMatch(/costliest field is c\.p\.t\b/);
    // A top-level list is costed by its pageSize.
    const pages = await gql(account.testKey, `{ payments(pageSize: 100) { nodes { id gatewayTransactions(first: 100) { ${CALL_FIELDS} } } } }`);
    expect(pages.body.errors[0].message).toMatch(/costliest field is payments\.nodes\.gatewayTransactions\b/);
    expect((await gql(account.testKey, `{ payments(pageSize: 100) { nodes { id gatewayTransactions(first: 10) { ${CALL_FIELDS} } } } }`)).body.errors).toBeUndefined();
  });
});
