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
  const res = await gql('query($t: String!) { __type(name: $t) { fields { name type { name ofType { name } } } } }', { t: type });
  const f = (res.body.data.__type.fields as Array<{ name: string; type: { name: string | null; ofType: { name: string } | null } }>).find((x) => x.name === field)!;
  return f.type.name ?? f.type.ofType!.name;
}

describe('closed sets as GraphQL enums', () => {
  it.each([
    ['Payment', 'currency', 'Currency'], ['Payment', 'originalCurrency', 'Currency'], ['Refund', 'currency', 'Currency'],
    ['Price', 'currency', 'Currency'], ['Invoice', 'currency', 'Currency'], ['PaymentLink', 'currency', 'Currency'],
    ['CheckoutSession', 'currency', 'Currency'], ['BalanceTransaction', 'currency', 'Currency'], ['CreditBalance', 'currency', 'Currency'],
    ['PaymentMethodDetails', 'brand', 'CardBrand'], ['Invoice', 'emailStatus', 'InvoiceEmailStatus'],
    ['GatewayTransaction', 'outcome', 'GatewayTransactionOutcome'], ['Address', 'country', 'Country'], ['PaymentAttempt', 'outcome', 'GatewayTransactionOutcome'],
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
});
