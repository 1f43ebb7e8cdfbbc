import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}, key = app.account.testKey) =>
  app.request('POST', '/graphql', { key, body: { query, variables } });

describe('GraphQL payments, refunds, gateways and routing', () => {
  it('should create a payment with a card, refund it, and read it back', async () => {
    const created = await gql(
      `mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id status amount currency paymentMethodDetails { brand last4 } attempts { gatewayId outcome } } }`,
      { input: { amount: 2500, currency: 'eur', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 1, expYear: 2033, cvc: '321' } } },
    );
    expect(created.body.errors).toBeUndefined();
    const p = created.body.data.createPayment;
    expect(p).toMatchObject({ status: 'succeeded', amount: 2500, currency: 'EUR', paymentMethodDetails: { brand: 'visa', last4: '4242' } });
    const refund = await gql('mutation($id: ID!) { refundPayment(paymentId: $id, amount: 500, reason: "dup") { status amount } }', { id: p.id });
    expect(refund.body.data.refundPayment).toEqual({ status: 'succeeded', amount: 500 });
    const read = await gql('query($id: ID!) { payment(id: $id) { amountRefunded refunds { amount reason } } }', { id: p.id });
    expect(read.body.data.payment).toEqual({ amountRefunded: 500, refunds: [{ amount: 500, reason: 'dup' }] });
    const invalid = await gql('mutation { createPayment(input: { amount: 1.5, currency: "usd", paymentMethod: "card" }) { id } }');
    expect(invalid.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'amount' });
    const notRefundable = await gql('mutation($id: ID!) { refundPayment(paymentId: $id, amount: 999999) { id } }', { id: p.id });
    expect(notRefundable.body.errors[0].extensions.code).toBe('refund_exceeds_remaining');
  });

  it('should never quote card data in an input error, even past text holding "; " or \' at "\'', async () => {
    const CVC = /(?<![0-9A-Za-z])987(?![0-9A-Za-z])/;
    const number = '4000056655665556';
    const card = { number, expMonth: 3, expYear: 2031, cvc: '987' };
    const query = 'mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id } }';
    const inputs = [
      { amount: 100, currency: 'usd', paymentMethod: 'card', description: 'Order 12; gift', card, unknownField: 'x' },
      { amount: 100, currency: 'usd', paymentMethod: 'card', description: 'leave it at "door"', card, unknownField: 1 },
      { amount: 100, currency: 'usd', paymentMethod: 'card', card: { ...card, name: 'A; B' } },
      { amount: 100, currency: 'usd', paymentMethod: 'card', description: 'a "quoted; \\" text', card: { ...card, expMonth: 'March' } },
    ];
    const logsBefore = app.logs.length;
    const refused = async (body: { query: string; variables?: unknown; operationName?: string }, idempotencyKey: string) => {
      const res = await app.request('POST', '/graphql', { key: app.account.testKey, body, headers: { 'Idempotency-Key': idempotencyKey } });
      expect(res.body.errors?.[0]?.extensions?.code).toBe('invalid_parameter');
      expect(res.text).not.toMatch(CVC); // as a number of its own: a request id's hex may hold 987
      expect(res.text).not.toContain(number.slice(6, 12));
      return res.body.errors[0].message as string;
    };
    for (const [i, input] of inputs.entries()) {
      expect(await refused({ query, variables: { input } }, `gql-card-${i}`)).toMatch(/got an invalid value/);
    }
    // Where the value sits and why it was refused survive; the value does not.
    expect(await refused({ query, variables: { input: inputs[3] } }, 'gql-card-reason'))
      .toBe('Variable "$input" got an invalid value at "input.card.expMonth"; Int cannot represent non-integer value');
    // A metadata key printed unquoted cannot make the value look shorter than it is.
    expect(await refused({ query, variables: { input: { amount: 100, paymentMethod: 'card', card, metadata: { '}}; x': 'y' } } } }, 'gql-card-key'))
      .toMatch(/^Variable "\$input" got an invalid value; /);
    // The card written in the document itself, refused at execution or at validation.
    await refused({
      query: `mutation($m: Int = 12) { createPayment(input: { amount: 100, currency: "usd", paymentMethod: "card", card: { number: "${number}", expMonth: $m, expYear: 2031, cvc: "987" } }) { id } }`,
      variables: { m: null },
    }, 'gql-card-inline');
    await refused({ query: `mutation { createPayment(input: { amount: 100, currency: "usd", paymentMethod: "card", card: "${number} 987" }) { id } }` }, 'gql-card-literal');
    // Text the client chose, wherever graphql-js or Apollo would quote it: an input field's key,
    // a syntax error's token, an operation name, and text imitating our own "too complex" answer.
    expect(await refused({ query, variables: { input: { ...inputs[0], card: { ...card, [`${number} 987`]: 1 } } } }, 'gql-card-fieldname'))
      .toMatch(/A field that is not a GraphQL name is not defined by type "CardInput"/);
    expect(await refused({ query: `{ __typename } "x" "${number} 987"` }, 'gql-card-syntax')).toMatch(/^Syntax Error: Unexpected String\.$/);
    expect(await refused({ query: '{ __typename } 987' }, 'gql-card-syntax-int')).toBe('Syntax Error: Unexpected Int.');
    expect(await refused({ query: 'query A { __typename }', operationName: `card ${number} cvc 987` }, 'gql-card-opname')).toBe('Unknown operation name.');
    expect(await refused({ query: 'query A { __typename } query B { __typename }' }, 'gql-card-no-opname')).toMatch(/operation name/);
    expect(await refused({ query, variables: { input: { ...inputs[0], card: { ...card, 'Query is too complex': 1 } } } }, 'gql-card-too-complex'))
      .toMatch(/got an invalid value/);
    const stored = await app.server.services.db.select<{ response_body: string }>("SELECT response_body FROM idempotency_keys WHERE idempotency_key LIKE 'gql-card-%'");
    expect(stored.length).toBe(inputs.length + 10);
    expect(JSON.stringify(stored)).not.toMatch(CVC);
    expect(JSON.stringify(stored)).not.toContain(number.slice(6, 12));
    // None of these is logged: their messages held the values before they were rebuilt.
    expect(app.logs.slice(logsBefore).join('')).not.toMatch(/invalid value|cannot represent|graphql resolver failed/);
  });

  it('should batch Payment.customer, Payment.refunds and Customer.payments (constant SQL for N payments)', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const addPayments = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const c = await app.request('POST', '/v1/customers', { key, body: { email: `batch${Math.random()}@example.com` } });
        const p = await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: c.body.data.id } });
        await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.body.data.id, amount: 100 } });
      }
    };
    const count = async () => {
      const before = app.sql.length;
      const res = await gql('{ payments(pageSize: 100) { total nodes { id customer { email payments { id } } refunds { amount } } } }', {}, key);
      expect(res.body.errors).toBeUndefined();
      // Statements reading these tables: an API key or routing cache refill (1 s) is no N+1.
      const queries = app.sql.slice(before).filter((q) => /\b(payments|customers|refunds)\b/.test(q)).length;
      return { queries, nodes: res.body.data.payments.nodes };
    };
    await addPayments(2);
    const small = await count();
    await addPayments(8);
    const large = await count();
    expect(large.nodes).toHaveLength(10);
    for (const n of large.nodes) {
      expect(n.customer.payments).toEqual([{ id: n.id }]);
      expect(n.refunds).toEqual([{ amount: 100 }]);
    }
    expect(large.queries).toBe(small.queries);
    expect(large.queries).toBeLessThanOrEqual(6);
  });

  it('should manage gateways, routing, simulation and FX rates', async () => {
    const key = app.account.liveKey;
    const g = await gql('mutation { createGateway(input: { name: "Sim", type: "simulator", currencies: ["usd"] }) { id type currencies credentialsSet } }', {}, key);
    const gw = g.body.data.createGateway;
    expect(gw).toMatchObject({ type: 'simulator', currencies: ['USD'], credentialsSet: false });
    const routing = await gql('mutation($c: JSONObject!) { setRouting(config: $c) }', { c: { rules: [{ name: 'all', strategy: 'priority', gateways: [{ gatewayId: gw.id }] }], fallback: [], maxAttempts: 2 } }, key);
    expect(routing.body.data.setRouting.rules).toHaveLength(1);
    const sim = await gql('{ simulateRouting(input: { amount: 100, currency: "usd" }) { rule gateways skipped { gatewayId reason } } }', {}, key);
    expect(sim.body.data.simulateRouting).toEqual({ rule: 'all', gateways: [gw.id], skipped: [] });
    const eur = await gql('{ simulateRouting(input: { amount: 100, currency: "eur" }) { gateways skipped { gatewayId reason } } }', {}, key);
    expect(eur.body.data.simulateRouting).toEqual({ gateways: [], skipped: [{ gatewayId: gw.id, reason: 'currency' }] });
    const fx = await gql('mutation { setFxRates(rates: [{ from: "EUR", to: "USD", rate: "1.10" }]) { rates { from to rate } } }', {}, key);
    expect(fx.body.data.setFxRates.rates).toEqual([{ from: 'EUR', to: 'USD', rate: '1.1' }]);
  });
});
