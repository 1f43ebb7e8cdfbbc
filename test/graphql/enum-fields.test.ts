import { startTestApp, type TestApp } from '../helpers/app';

/** Closed sets that were Strings are enums (issue 37): currencies, card brands, an invoice's e-mail status. */
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ runWorkers: false });
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}) =>
  app.request('POST', '/graphql', { key: app.account.testKey, body: { query, variables } });

async function fieldType(type: string, field: string): Promise<string> {
  const res = await gql('query($t: String!) { __type(name: $t) { fields { name type { name ofType { name ofType { name ofType { name } } } } } } }', { t: type });
  type Ref = { name: string | null; ofType: Ref | null };
  const f = (res.body.data.__type.fields as Array<{ name: string; type: Ref }>).find((x) => x.name === field)!;
  // Through lists and non-nulls to the named type.
  let ref: Ref | null = f.type;
  while (ref && ref.name === null) ref = ref.ofType;
  return ref?.name ?? '';
}

describe('closed sets as GraphQL enums', () => {
  it.each([
    ['Payment', 'currency', 'Currency'], ['Payment', 'originalCurrency', 'Currency'], ['Refund', 'currency', 'Currency'],
    ['Price', 'currency', 'Currency'], ['Invoice', 'currency', 'Currency'], ['PaymentLink', 'currency', 'Currency'],
    ['CheckoutSession', 'currency', 'Currency'], ['BalanceTransaction', 'currency', 'Currency'], ['CreditBalance', 'currency', 'Currency'],
    ['PaymentMethodDetails', 'brand', 'CardBrand'], ['Invoice', 'emailStatus', 'InvoiceEmailStatus'],
    ['GatewayTransaction', 'outcome', 'GatewayTransactionOutcome'], ['Address', 'country', 'Country'], ['PaymentAttempt', 'outcome', 'GatewayTransactionOutcome'],
    ['Customer', 'country', 'Country'], ['TaxRate', 'country', 'Country'], ['RoutingConditions', 'country', 'Country'],
  ])('should type %s.%s as %s', async (type, field, expected) => {
    expect(await fieldType(type, field)).toBe(expected);
  });

  it('should answer the same strings as REST, and still take currencies as strings in any case', async () => {
    const created = await gql('mutation { createPayment(input: { amount: 500, currency: "eur", paymentMethod: "pm_card_visa" }) { id currency paymentMethodDetails { brand } } }');
    expect(created.body.errors).toBeUndefined();
    const payment = created.body.data.createPayment;
    const rest = await app.request('GET', `/v1/payments/${payment.id}`, { key: app.account.testKey });
    expect(payment.currency).toBe(rest.body.data.currency);
    expect(payment.currency).toBe('EUR');
    expect(payment.paymentMethodDetails.brand).toBe(rest.body.data.paymentMethodDetails.brand);
    // A gateway's answer reads as REST writes it.
    const attempts = await gql('query($id: ID!) { payment(id: $id) { attempts { outcome } gatewayTransactions { outcome } } }', { id: payment.id });
    expect(attempts.body.errors).toBeUndefined();
    expect(attempts.body.data.payment.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(rest.body.data.attempts.map((a: { outcome: string }) => a.outcome));
    expect(attempts.body.data.payment.gatewayTransactions.map((t: { outcome: string }) => t.outcome)).toEqual(['succeeded']);
    const values = await gql('{ __type(name: "Currency") { enumValues { name } } }');
    expect(values.body.data.__type.enumValues.map((v: { name: string }) => v.name)).toEqual(expect.arrayContaining(['EUR', 'USD', 'JPY', 'KWD']));
  });

  it('should answer a customer\'s country as a Country, refuse a code that names no country on REST and GraphQL alike, and answer null for one stored before codes were checked', async () => {
    const rest = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'country-enum@example.com', country: 'de' } });
    expect(rest.status).toBe(201);
    const read = await gql('query($id: ID!) { customer(id: $id) { country } }', { id: rest.body.data.id });
    expect(read.body.data).toEqual({ customer: { country: 'DE' } });
    const refused = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'country-zz@example.com', country: 'ZZ' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_parameter', param: 'country' });
    // Taken as a string in any case, as REST takes it (as currencies are).
    const gqlRefused = await gql('mutation { createCustomer(input: { email: "country-zz2@example.com", country: "zz" }) { id } }');
    expect(gqlRefused.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'country' });
    const created = await gql('mutation { createCustomer(input: { email: "country-fr@example.com", country: "fr" }) { id country } }');
    expect(created.body.data.createCustomer.country).toBe('FR');
    // Stored by an earlier release, which took any two letters.
    await app.server.services.db.execute('UPDATE customers SET country = $1 WHERE id = $2', ['ZZ', rest.body.data.id]);
    const legacy = await gql('query($id: ID!) { customer(id: $id) { id country } }', { id: rest.body.data.id });
    expect(legacy.body.errors).toBeUndefined();
    expect(legacy.body.data).toEqual({ customer: { id: rest.body.data.id, country: null } });
    expect((await app.request('GET', `/v1/customers/${rest.body.data.id}`, { key: app.account.testKey })).body.data.country).toBe('ZZ');
  });

  it('should answer a routing rule\'s countries as Country values, refusing a code that names no country', async () => {
    const account = await app.createAccount();
    const gateway = await app.request('POST', '/v1/gateways', { key: account.testKey, body: { name: 'Sim', type: 'simulator' } });
    const rules = (country: string[]) => ({ rules: [{ name: 'eu', when: { country }, strategy: 'priority', gateways: [{ gatewayId: gateway.body.data.id }] }], fallback: [], maxAttempts: 1 });
    expect((await app.request('PUT', '/v1/routing', { key: account.testKey, body: rules(['de', 'FR']) })).status).toBe(200);
    const refused = await app.request('PUT', '/v1/routing', { key: account.testKey, body: rules(['DE', 'QQ']) });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_parameter', param: 'rules[0].when.country[1]' });
    const read = await app.request('POST', '/graphql', { key: account.testKey, body: { query: '{ routing { rules { when { country } } } }' } });
    expect(read.body.data).toEqual({ routing: { rules: [{ when: { country: ['DE', 'FR'] } }] } });
  });
});
