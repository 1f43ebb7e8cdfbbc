import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}) =>
  app.request('POST', '/graphql', { key: app.account.testKey, body: { query, variables } });

interface TypeRef { kind: string; name: string | null; ofType: TypeRef | null }
const named = (t: TypeRef): { kind: string; name: string | null } => (t.ofType ? named(t.ofType) : { kind: t.kind, name: t.name });

/** Each field of a type → the named type it holds, from introspection. */
async function fieldTypes(type: string): Promise<Record<string, { kind: string; name: string | null }>> {
  const res = await gql('query($t: String!) { __type(name: $t) { fields { name type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } inputFields { name type { kind name ofType { kind name } } } } }', { t: type });
  const fields = (res.body.data.__type.fields ?? res.body.data.__type.inputFields) as Array<{ name: string; type: TypeRef }>;
  return Object.fromEntries(fields.map((f) => [f.name, named(f.type)]));
}

async function enumValues(type: string): Promise<string[]> {
  const res = await gql('query($t: String!) { __type(name: $t) { kind enumValues { name } } }', { t: type });
  expect(res.body.data.__type.kind).toBe('ENUM');
  return res.body.data.__type.enumValues.map((v: { name: string }) => v.name);
}

describe('GraphQL types match the REST contract', () => {
  it('should carry amounts as SafeInt integers, beyond 2^31 and both ways', async () => {
    for (const [type, fields] of [
      ['Payment', ['amount', 'originalAmount', 'amountRefunded']], ['Refund', ['amount']], ['Price', ['unitAmount']],
      ['CreatePaymentInput', ['amount']], ['CreatePriceInput', ['unitAmount']], ['RoutingSimulationInput', ['amount']],
    ] as const) {
      const types = await fieldTypes(type);
      for (const f of fields) expect([type, f, types[f]]).toEqual([type, f, { kind: 'SCALAR', name: 'SafeInt' }]);
    }
    const big = 2 ** 31 + 7;
    const created = await gql('mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id amount amountRefunded } }', {
      input: { amount: big, currency: 'usd', paymentMethod: 'pm_card_visa' },
    });
    expect(created.body.errors).toBeUndefined();
    expect(created.text).toContain(`"amount":${big},`);
    const refund = await gql('mutation($id: ID!, $a: SafeInt) { refundPayment(paymentId: $id, amount: $a) { amount } }', { id: created.body.data.createPayment.id, a: big - 1 });
    expect(refund.body.data.refundPayment.amount).toBe(big - 1);
    // A fraction, or an integer past 2^53, is refused by the type before any service sees it.
    for (const amount of [10.5, 2 ** 53]) {
      const refused = await gql('mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id } }', { input: { amount, currency: 'usd', paymentMethod: 'pm_card_visa' } });
      expect(refused.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'amount' });
    }
  });

  it('should type statuses and kinds as enums with the REST values', async () => {
    expect((await fieldTypes('Payment')).status).toEqual({ kind: 'ENUM', name: 'PaymentStatus' });
    expect(await enumValues('PaymentStatus')).toEqual(['pending', 'succeeded', 'failed', 'canceled', 'requires_review']);
    expect((await fieldTypes('Refund')).status).toEqual({ kind: 'ENUM', name: 'RefundStatus' });
    expect(await enumValues('RefundStatus')).toEqual(['pending', 'succeeded', 'failed', 'requires_review']);
    expect((await fieldTypes('WebhookEndpoint')).status).toEqual({ kind: 'ENUM', name: 'WebhookEndpointStatus' });
    expect(await enumValues('WebhookEndpointStatus')).toEqual(['enabled', 'disabled']);
    expect((await fieldTypes('WebhookDeliveryAttempt')).status).toEqual({ kind: 'ENUM', name: 'WebhookDeliveryAttemptStatus' });
    expect((await fieldTypes('Price')).type).toEqual({ kind: 'ENUM', name: 'PriceType' });
    expect(await enumValues('PriceType')).toEqual(['one_time', 'recurring']);
    expect((await fieldTypes('Recurring')).interval).toEqual({ kind: 'ENUM', name: 'RecurringInterval' });
    expect((await fieldTypes('GatewayTransaction')).kind).toEqual({ kind: 'ENUM', name: 'GatewayTransactionKind' });
    expect(await enumValues('GatewayTransactionKind')).toEqual(['charge', 'refund', 'status', 'save_card']);

    // The wire value is REST's string; a filter takes the enum value.
    const paid = await gql('mutation { createPayment(input: { amount: 700, currency: "usd", paymentMethod: "pm_card_visa" }) { id status } }');
    expect(paid.body.data.createPayment.status).toBe('succeeded');
    const filtered = await gql('query($s: PaymentStatus) { a: payments(status: succeeded, pageSize: 100) { nodes { id status } } b: payments(status: $s) { total } }', { s: 'failed' });
    expect(filtered.body.errors).toBeUndefined();
    expect(filtered.body.data.a.nodes.map((p: { id: string }) => p.id)).toContain(paid.body.data.createPayment.id);
    expect(filtered.body.data.b.total).toBe(0);
    // A value outside the enum is the client's mistake, named by its argument or variable.
    expect((await gql('{ payments(status: paid) { total } }')).body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'status' });
    expect((await gql('query($s: PaymentStatus) { payments(status: $s) { total } }', { s: 'paid' })).body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 's' });
    const price = await gql('mutation { createProduct(input: { name: "Plan" }) { id } }');
    const recurring = await gql('mutation($p: String!) { createPrice(input: { productId: $p, unitAmount: 900, currency: "usd", recurring: { interval: month } }) { type recurring { interval intervalCount } } }', { p: price.body.data.createProduct.id });
    expect(recurring.body.data.createPrice).toEqual({ type: 'recurring', recurring: { interval: 'month', intervalCount: 1 } });
  });

  it('should type timestamps as DateTime, serialized exactly as REST gives them', async () => {
    for (const [type, fields] of [
      ['Payment', ['createdAt', 'updatedAt']], ['Customer', ['createdAt', 'updatedAt']], ['Refund', ['createdAt']], ['Event', ['createdAt']],
      ['GatewayTransaction', ['createdAt']], ['WebhookDeliveryAttempt', ['createdAt', 'nextRetryAt']], ['FxRate', ['updatedAt']],
    ] as const) {
      const types = await fieldTypes(type);
      for (const f of fields) expect([type, f, types[f]]).toEqual([type, f, { kind: 'SCALAR', name: 'DateTime' }]);
    }
    const customer = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'datetime@example.com' } });
    const payment = await app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 500, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.body.data.id } });
    const rest = payment.body.data;
    expect(rest.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const res = await gql('query($id: ID!) { payment(id: $id) { createdAt updatedAt customer { createdAt updatedAt } gatewayTransactions { createdAt } } }', { id: rest.id });
    expect(res.body.errors).toBeUndefined();
    const p = res.body.data.payment;
    expect({ createdAt: p.createdAt, updatedAt: p.updatedAt }).toEqual({ createdAt: rest.createdAt, updatedAt: rest.updatedAt });
    expect(p.customer).toEqual({ createdAt: customer.body.data.createdAt, updatedAt: customer.body.data.updatedAt });
    const calls = await app.request('GET', `/v1/payments/${rest.id}/gateway-transactions`, { key: app.account.testKey });
    expect(p.gatewayTransactions[0].createdAt).toBe(calls.body.data[0].createdAt);
  });
});
