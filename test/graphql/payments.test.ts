import { startTestApp, type TestApp } from '../helpers/app';
import { groupBy, newestPerParent } from '../../src/db/list';

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
      `mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id status amount currency paymentMethodDetails { brand last4 } attempts { gateway outcome latency } } }`,
      { input: { amount: 2500, currency: 'eur', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 1, expYear: 2033, cvc: '321' } } },
    );
    expect(created.body.errors).toBeUndefined();
    const p = created.body.data.createPayment;
    expect(p).toMatchObject({ status: 'succeeded', amount: 2500, currency: 'EUR', paymentMethodDetails: { brand: 'visa', last4: '4242' } });
    expect(p.attempts).toEqual([{ gateway: 'gw_builtin_simulator', outcome: 'succeeded', latency: expect.any(Number) }]);
    const refund = await gql('mutation($id: ID!) { refundPayment(paymentId: $id, amount: 500, reason: "dup") { status amount } }', { id: p.id });
    expect(refund.body.data.refundPayment).toEqual({ status: 'succeeded', amount: 500 });
    const read = await gql('query($id: ID!) { payment(id: $id) { amountRefunded refunds { amount reason } } }', { id: p.id });
    expect(read.body.data.payment).toEqual({ amountRefunded: 500, refunds: [{ amount: 500, reason: 'dup' }] });
    const invalid = await gql('mutation { createPayment(input: { amount: 1.5, currency: "usd", paymentMethod: "card" }) { id } }');
    expect(invalid.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'amount' });
    const notRefundable = await gql('mutation($id: ID!) { refundPayment(paymentId: $id, amount: 999999) { id } }', { id: p.id });
    expect(notRefundable.body.errors[0].extensions.code).toBe('refund_exceeds_remaining');
  });

  it("should leave only the card's CVC out of a mutation's idempotency fingerprint", async () => {
    const query = 'mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id status } }';
    const send = (input: Record<string, unknown>, idempotencyKey: string) =>
      app.request('POST', '/graphql', { key: app.account.testKey, body: { query, variables: { input } }, headers: { 'Idempotency-Key': idempotencyKey } });
    const base = { amount: 720, currency: 'usd', paymentMethod: 'pm_card_visa' };
    const first = await send({ ...base, metadata: { cvc: 'x' } }, 'gql-metadata-cvc');
    expect(first.body.data.createPayment.status).toBe('succeeded');
    const other = await send({ ...base, metadata: { cvc: 'y' } }, 'gql-metadata-cvc');
    expect(other.body.errors[0].extensions.code).toBe('idempotency_key_reused');
    // input.card is a card: another CVC alone is the same request, replayed.
    const card = { number: '4242424242424242', expMonth: 5, expYear: 2033, cvc: '321' };
    const paid = await send({ ...base, paymentMethod: 'card', card }, 'gql-cvc-of-card');
    expect(paid.body.data.createPayment.status).toBe('succeeded');
    const again = await send({ ...base, paymentMethod: 'card', card: { ...card, cvc: '654' } }, 'gql-cvc-of-card');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data).toEqual(paid.body.data);
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
      expect(['invalid_parameter', 'unknown_parameter', 'missing_parameter']).toContain(res.body.errors?.[0]?.extensions?.code);
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
    // Refused before any mutation ran: nothing is kept under those keys, card data least of all.
    const stored = await app.server.services.db.select<{ response_body: string }>("SELECT response_body FROM idempotency_keys WHERE idempotency_key LIKE 'gql-card-%'");
    expect(stored).toEqual([]);
    // None of these is logged: their messages held the values before they were rebuilt.
    expect(app.logs.slice(logsBefore).join('')).not.toMatch(/invalid value|cannot represent|graphql resolver failed/);
  });

  it('should batch Payment.customer, Payment.refunds, Payment.gatewayTransactions, Customer.payments and Customer.paymentMethods (constant SQL for N payments)', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const addPayments = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const c = await app.request('POST', '/v1/customers', { key, body: { email: `batch${Math.random()}@example.com` } });
        const pm = await app.request('POST', `/v1/customers/${c.body.data.id}/payment-methods`, { key, body: { card: { number: '4242424242424242', expMonth: 1, expYear: 2033, cvc: '123' } } });
        const p = await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: pm.body.data.id, customerId: c.body.data.id } });
        await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.body.data.id, amount: 100 } });
      }
    };
    const count = async () => {
      const before = app.sql.length;
      const res = await gql(
        '{ payments(pageSize: 20) { total nodes { id customer { email payments { id } paymentMethods { id } } refunds { amount } gatewayTransactions { kind } } } }',
        {}, key,
      );
      expect(res.body.errors).toBeUndefined();
      // Statements reading these tables: an API key or routing cache refill (1 s) is no N+1.
      const queries = app.sql.slice(before).filter((q) => /\b(payments|customers|refunds|payment_methods|gateway_transactions)\b/.test(q)).length;
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
      expect(n.customer.paymentMethods).toHaveLength(1);
      expect(n.gatewayTransactions).toEqual([{ kind: 'refund' }, { kind: 'charge' }]);
    }
    expect(large.queries).toBe(small.queries);
    expect(large.queries).toBeLessThanOrEqual(8);
  });

  it('should save a card, list it, pay with it and show the gateway calls, as REST does', async () => {
    const customer = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'gql-saved@example.com' } });
    const customerId = customer.body.data.id as string;
    const number = '5555555555554444';
    const saved = await gql(
      'mutation($c: ID!, $input: SavePaymentMethodInput!) { savePaymentMethod(customerId: $c, input: $input) { id object customerId gatewayId type isDefault card { brand last4 expMonth expYear fingerprint } } }',
      { c: customerId, input: { card: { number, expMonth: 7, expYear: 2034, cvc: '123' }, currency: 'eur' } },
    );
    expect(saved.body.errors).toBeUndefined();
    const method = saved.body.data.savePaymentMethod;
    expect(method).toMatchObject({ object: 'payment_method', customerId, type: 'card', isDefault: true, card: { brand: 'mastercard', last4: '4444', expMonth: 7, expYear: 2034 } });
    expect(method.id).toMatch(/^pm_/);
    expect(saved.text).not.toContain(number);
    // The same object REST lists.
    const rest = await app.request('GET', `/v1/customers/${customerId}/payment-methods`, { key: app.account.testKey });
    const listed = await gql('query($c: ID!) { paymentMethods(customerId: $c) { total nodes { id isDefault } } customer(id: $c) { paymentMethods { id card { last4 } } } }', { c: customerId });
    expect(listed.body.data.paymentMethods).toEqual({ total: 1, nodes: [{ id: method.id, isDefault: true }] });
    expect(listed.body.data.customer.paymentMethods).toEqual([{ id: method.id, card: { last4: '4444' } }]);
    expect(rest.body.data.map((m: { id: string }) => m.id)).toEqual([method.id]);

    const paid = await gql(
      'mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id status gatewayTransactions { kind outcome attempt idempotencyKey gatewayId request } } }',
      { input: { amount: 1800, currency: 'eur', paymentMethod: method.id } },
    );
    expect(paid.body.errors).toBeUndefined();
    const payment = paid.body.data.createPayment;
    expect(payment.status).toBe('succeeded');
    expect(payment.gatewayTransactions).toHaveLength(1);
    expect(payment.gatewayTransactions[0]).toMatchObject({ kind: 'charge', outcome: 'succeeded', attempt: 1, idempotencyKey: `${payment.id}_a1`, gatewayId: method.gatewayId });
    const calls = await gql('query($p: ID!) { gatewayTransactions(paymentId: $p) { total nodes { id kind paymentId } } }', { p: payment.id });
    const restCalls = await app.request('GET', `/v1/payments/${payment.id}/gateway-transactions`, { key: app.account.testKey });
    expect(calls.body.data.gatewayTransactions).toEqual({ total: 1, nodes: [{ id: restCalls.body.data[0].id, kind: 'charge', paymentId: payment.id }] });

    // Errors carry the REST codes and params.
    const unknownCustomer = await gql('mutation($input: SavePaymentMethodInput!) { savePaymentMethod(customerId: "cus_nope", input: $input) { id } }', {
      input: { card: { number: '4242424242424242', expMonth: 1, expYear: 2033, cvc: '321' } },
    });
    expect(unknownCustomer.body.errors[0].extensions).toMatchObject({ code: 'resource_not_found', param: 'customerId' });
    const unknownCustomerCards = await gql('{ paymentMethods(customerId: "cus_nope") { total } }');
    expect(unknownCustomerCards.body.errors[0].extensions).toMatchObject({ code: 'resource_not_found', param: 'customerId' });
    const unknownRefunded = await gql('mutation { refundPayment(paymentId: "pay_nope") { id } }');
    expect(unknownRefunded.body.errors[0].extensions).toMatchObject({ code: 'resource_not_found', param: 'paymentId' });
    const badCard = await gql('mutation($c: ID!, $input: SavePaymentMethodInput!) { savePaymentMethod(customerId: $c, input: $input) { id } }', {
      c: customerId, input: { card: { number: '4242424242424241', expMonth: 1, expYear: 2033, cvc: '321' } },
    });
    expect(badCard.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'card.number' });
    const declinedCard = await gql('mutation($c: ID!, $input: SavePaymentMethodInput!) { savePaymentMethod(customerId: $c, input: $input) { id } }', {
      c: customerId, input: { card: { number: '4000000000000002', expMonth: 1, expYear: 2033, cvc: '321' } },
    });
    expect(declinedCard.body.errors[0].extensions).toMatchObject({ code: 'card_declined', param: 'card' });
    const unknownPayment = await gql('{ gatewayTransactions(paymentId: "pay_nope") { total } }');
    expect(unknownPayment.body.errors[0].extensions).toMatchObject({ code: 'resource_not_found', param: 'paymentId' });
    const badPage = await gql('query($c: ID!) { paymentMethods(customerId: $c, pageSize: 500) { total } }', { c: customerId });
    expect(badPage.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'pageSize' });
    // Saved cards are customer data; gateway calls are payment data.
    const paymentsOnly = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['payments:read'] } });
    const customersOnly = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['customers:read'] } });
    const noCards = await gql('query($c: ID!) { paymentMethods(customerId: $c) { total } }', { c: customerId }, paymentsOnly.body.data.secret);
    expect(noCards.body.errors[0].extensions.code).toBe('permission_denied');
    const noCalls = await gql('query($p: ID!) { gatewayTransactions(paymentId: $p) { total } }', { p: payment.id }, customersOnly.body.data.secret);
    expect(noCalls.body.errors[0].extensions.code).toBe('permission_denied');
    const noNestedCalls = await gql('query($p: ID!) { payment(id: $p) { id gatewayTransactions { id } } }', { p: payment.id }, paymentsOnly.body.data.secret);
    expect(noNestedCalls.body.errors).toBeUndefined();
    const noNestedCards = await gql('query($c: ID!) { customer(id: $c) { id paymentMethods { id } } }', { c: customerId }, customersOnly.body.data.secret);
    expect(noNestedCards.body.errors).toBeUndefined();
  });

  it('should give each parent only its newest objects in a nested list, in one query for all parents', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const pay = async () => (await app.request('POST', '/v1/payments', { key, body: { amount: 900, currency: 'usd', paymentMethod: 'pm_card_visa' } })).body.data.id as string;
    const [a, b] = [await pay(), await pay()];
    const refundIds: Record<string, string[]> = { [a]: [], [b]: [] };
    for (let i = 0; i < 3; i++) {
      for (const p of [a, b]) refundIds[p].push((await app.request('POST', '/v1/refunds', { key, body: { paymentId: p, amount: 100 } })).body.data.id);
    }
    const before = app.sql.length;
    const rows = await newestPerParent<{ id: string; payment_id: string }>(app.server.services.db, {
      columns: 'id, payment_id, created_at', from: 'refunds', parentColumn: 'payment_id', accountId: account.accountId, mode: 'test', parentIds: [a, b, a], limit: 2,
    });
    expect(app.sql.length - before).toBe(1);
    // One statement text whatever the number of parents (one prepared plan on PostgreSQL).
    await newestPerParent(app.server.services.db, {
      columns: 'id, payment_id, created_at', from: 'refunds', parentColumn: 'payment_id', accountId: account.accountId, mode: 'test', parentIds: [a], limit: 2,
    });
    expect(app.sql.length - before).toBe(2);
    expect(app.sql[before + 1]).toBe(app.sql[before]);
    const grouped = groupBy(rows, (r) => r.payment_id);
    // Newest first (ties by id, as the REST list): the first two of each payment's full list.
    for (const p of [a, b]) {
      const all = (await app.request('GET', `/v1/payments/${p}/refunds`, { key })).body.data.map((r: { id: string }) => r.id);
      expect(all.sort()).toEqual([...refundIds[p]].sort());
      const newest = (await app.request('GET', `/v1/payments/${p}/refunds`, { key })).body.data.slice(0, 2).map((r: { id: string }) => r.id);
      expect(grouped.get(p)?.map((r) => r.id)).toEqual(newest);
    }
    // The joined form (saved cards with their customer's default) ranks by the main table's columns.
    const c = (await app.request('POST', '/v1/customers', { key, body: { email: 'nested-cards@example.com' } })).body.data.id as string;
    const saved: string[] = [];
    for (let i = 0; i < 3; i++) {
      saved.push((await app.request('POST', `/v1/customers/${c}/payment-methods`, { key, body: { card: { number: '4242424242424242', expMonth: 1, expYear: 2033, cvc: '123' } } })).body.data.id);
    }
    const cards = await newestPerParent<{ id: string; default_payment_method_id: string }>(app.server.services.db, {
      columns: 'pm.id, pm.created_at, c.default_payment_method_id', from: 'payment_methods pm JOIN customers c ON c.id = pm.customer_id', prefix: 'pm.',
      parentColumn: 'customer_id', accountId: account.accountId, mode: 'test', parentIds: [c], limit: 2,
    });
    const listed = (await app.request('GET', `/v1/customers/${c}/payment-methods`, { key })).body.data.map((m: { id: string }) => m.id);
    expect([...listed].sort()).toEqual([...saved].sort());
    expect(cards).toEqual([
      expect.objectContaining({ id: listed[0], default_payment_method_id: saved[0] }),
      expect.objectContaining({ id: listed[1], default_payment_method_id: saved[0] }),
    ]);
    expect(await newestPerParent(app.server.services.db, { columns: 'id, created_at', from: 'refunds', parentColumn: 'payment_id', accountId: account.accountId, mode: 'test', parentIds: [] })).toEqual([]);
  });

  it('should manage gateways, routing, simulation and FX rates', async () => {
    const key = app.account.liveKey;
    const g = await gql('mutation { createGateway(input: { name: "Sim", type: simulator, currencies: ["usd"] }) { id type currencies credentialsSet } }', {}, key);
    const gw = g.body.data.createGateway;
    expect(gw).toMatchObject({ type: 'simulator', currencies: ['USD'], credentialsSet: false });
    const routing = await gql('mutation($c: RoutingRuleSetInput!) { setRouting(config: $c) { rules { name strategy gateways { gatewayId } } maxAttempts } }', { c: { rules: [{ name: 'all', strategy: 'priority', gateways: [{ gatewayId: gw.id }] }], fallback: [], maxAttempts: 2 } }, key);
    expect(routing.body.data.setRouting).toEqual({ rules: [{ name: 'all', strategy: 'priority', gateways: [{ gatewayId: gw.id }] }], maxAttempts: 2 });
    const sim = await gql('{ simulateRouting(input: { amount: 100, currency: "usd" }) { rule gateways skipped { gatewayId reason } } }', {}, key);
    expect(sim.body.data.simulateRouting).toEqual({ rule: 'all', gateways: [gw.id], skipped: [] });
    const eur = await gql('{ simulateRouting(input: { amount: 100, currency: "eur" }) { gateways skipped { gatewayId reason } } }', {}, key);
    expect(eur.body.data.simulateRouting).toEqual({ gateways: [], skipped: [{ gatewayId: gw.id, reason: 'currency' }] });
    const fx = await gql('mutation { setFxRates(rates: [{ from: "EUR", to: "USD", rate: "1.10" }]) { rates { from to rate } } }', {}, key);
    expect(fx.body.data.setFxRates.rates).toEqual([{ from: 'EUR', to: 'USD', rate: '1.1' }]);
    const read = await gql('{ fxRates { object livemode rates { from to rate } demoRatesAvailable demoRates { to } } simulateRouting(input: { amount: 1, currency: "usd" }) { object } }', {}, key);
    expect(read.body.data.fxRates).toEqual({ object: 'fx_rates', livemode: true, rates: [{ from: 'EUR', to: 'USD', rate: '1.1' }], demoRatesAvailable: false, demoRates: [] });
    expect(read.body.data.simulateRouting.object).toBe('routing_decision');
    const testFx = await gql('{ fxRates { demoRatesAvailable demoRates { from to rate } } }');
    expect(testFx.body.data.fxRates.demoRates).toContainEqual({ from: 'USD', to: 'EUR', rate: '0.92' });
    // Update through the same service as REST: its validation and its answer.
    const updated = await gql('mutation($id: ID!) { updateGateway(id: $id, input: { name: "Sim 2", enabled: false }) { name enabled } }', { id: gw.id }, key);
    expect(updated.body.data.updateGateway).toEqual({ name: 'Sim 2', enabled: false });
    expect((await app.request('GET', `/v1/gateways/${gw.id}`, { key })).body.data).toMatchObject({ name: 'Sim 2', enabled: false });
    const badUpdate = await gql('mutation($id: ID!) { updateGateway(id: $id, input: { settings: { outage: "yes" } }) { id } }', { id: gw.id }, key);
    expect(badUpdate.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'settings.outage' });
  });

  it('should update a payment and read refunds through GraphQL as REST does', async () => {
    const p = (await gql('mutation { createPayment(input: { amount: 4100, currency: "usd", paymentMethod: "pm_card_visa" }) { id } }')).body.data.createPayment;
    const patched = await gql('mutation($id: ID!) { updatePayment(id: $id, input: { description: "order 7", metadata: { ref: "r7" } }) { description metadata } }', { id: p.id });
    expect(patched.body.data.updatePayment).toEqual({ description: 'order 7', metadata: { ref: 'r7' } });
    const notAllowed = await gql('mutation($id: ID!) { updatePayment(id: $id, input: { amount: 1 }) { id } }', { id: p.id });
    expect(notAllowed.body.errors[0].extensions).toMatchObject({ code: 'unknown_parameter', param: 'amount' });
    const r1 = (await gql('mutation($id: ID!) { refundPayment(paymentId: $id, amount: 1000) { id } }', { id: p.id })).body.data.refundPayment;
    await gql('mutation($id: ID!) { refundPayment(paymentId: $id, amount: 500) { id } }', { id: p.id });
    const one = await gql('query($id: ID!) { refund(id: $id) { id paymentId amount status } }', { id: r1.id });
    expect(one.body.data.refund).toEqual({ id: r1.id, paymentId: p.id, amount: 1000, status: 'succeeded' });
    const listed = await gql('query($p: String!) { refunds(paymentId: $p, sortField: amount, sortDirection: asc) { total nodes { amount } } }', { p: p.id });
    expect(listed.body.data.refunds).toEqual({ total: 2, nodes: [{ amount: 500 }, { amount: 1000 }] });
    const rest = await app.request('GET', `/v1/refunds?paymentId=${p.id}&sortField=amount&sortDirection=asc`, { key: app.account.testKey });
    expect(rest.body.data.map((r: { amount: number }) => r.amount)).toEqual([500, 1000]);
    const missing = await gql('{ refund(id: "re_nope") { id } }');
    expect(missing.body.errors[0].extensions).toMatchObject({ code: 'resource_not_found' });
    const badFilter = await gql('{ refunds(status: "done") { total } }');
    expect(badFilter.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'status' });
  });
});

describe('mistakes written in the document itself', () => {
  it('should name the field by its path inside the argument, as REST and variables do', async () => {
    const card = 'number: "4242424242424242", expMonth: 1, expYear: 2033';
    const cases: Array<[string, string, string]> = [
      [`mutation { createPayment(input: {amount: 100, currency: "USD", paymentMethod: "card", card: {${card}}}) { id } }`, 'missing_parameter', 'card.cvc'],
      [`mutation { createPayment(input: {amount: 100, currency: "USD", paymentMethod: "card", card: {${card}, cvc: "123", pin: "1"}}) { id } }`, 'unknown_parameter', 'card.pin'],
      [`mutation { createPayment(input: {amount: "lots", currency: "USD", paymentMethod: "pm_card_visa"}) { id } }`, 'invalid_parameter', 'amount'],
      ['mutation { setFxRates(rates: [{from: "EUR", to: "USD", rate: "1.1"}, {from: "GBP", to: "USD"}]) { rates { from } } }', 'missing_parameter', 'rates[1].rate'],
      ['mutation { setFxRates(rates: [{from: "EUR", to: "USD", rate: 1.1}]) { rates { from } } }', 'invalid_parameter', 'rates[0].rate'],
      ['mutation { refundPayment(paymentId: "pay_x", amount: "ten") { id } }', 'invalid_parameter', 'amount'],
      ['mutation { createCustomer(input: {name: "no e-mail"}) { id } }', 'missing_parameter', 'email'],
    ];
    for (const [query, code, param] of cases) {
      const res = await gql(query);
      expect({ query, status: res.status, ...res.body.errors?.[0]?.extensions, requestId: undefined }).toEqual({ query, status: 400, code, param, requestId: undefined });
      expect(JSON.stringify(res.body)).not.toContain('4242424242424242');
    }
    // A variable the operation does not define is not a wrong literal of the field it sits in.
    const undefinedVariable = await gql('mutation { createPayment(input: {amount: $nope, currency: "USD", paymentMethod: "pm_card_visa"}) { id } }');
    expect(undefinedVariable.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter' });
    expect(undefinedVariable.body.errors[0].extensions.param).toBeUndefined();
  });
});

describe('FX rates round trip', () => {
  it('should take back what fxRates returns, updatedAt included', async () => {
    const set = await gql('mutation { setFxRates(rates: [{ from: "eur", to: "usd", rate: "1.08" }]) { rates { from to rate } } }');
    expect(set.body.errors).toBeUndefined();
    const read = (await gql('{ fxRates { rates { from to rate updatedAt } } }')).body.data.fxRates.rates;
    expect(read).toEqual([{ from: 'EUR', to: 'USD', rate: '1.08', updatedAt: expect.any(String) }]);
    const again = await gql('mutation($r: [FxRateInput!]!) { setFxRates(rates: $r) { rates { from to rate } } }', { r: read });
    expect(again.body.errors).toBeUndefined();
    expect(again.body.data.setFxRates.rates).toEqual([{ from: 'EUR', to: 'USD', rate: '1.08' }]);
  });
});

describe('documents with more than one mutation', () => {
  it('should keep what a mutation did in the answer when a later one in the same document fails', async () => {
    const res = await gql(`mutation {
      a: createPayment(input: { amount: 777, currency: "usd", paymentMethod: "pm_card_visa" }) { id status }
      b: createPayment(input: { amount: 0, currency: "usd", paymentMethod: "pm_card_visa" }) { id }
    }`);
    expect(res.body.data.a).toMatchObject({ id: expect.stringMatching(/^pay_/), status: 'succeeded' });
    expect(res.body.data.b).toBeNull();
    expect(res.body.errors).toEqual([expect.objectContaining({ path: ['b'], extensions: expect.objectContaining({ code: 'invalid_parameter', param: 'amount' }) })]);
    const made = await app.request('GET', `/v1/payments/${res.body.data.a.id}`, { key: app.account.testKey });
    expect(made.body.data).toMatchObject({ amount: 777, status: 'succeeded' });

    const paid = (await gql('mutation { createPayment(input: { amount: 1000, currency: "usd", paymentMethod: "pm_card_visa" }) { id } }')).body.data.createPayment;
    const refunds = await gql(`mutation($p: ID!) {
      a: refundPayment(paymentId: $p, amount: 600) { id amount }
      b: refundPayment(paymentId: $p, amount: 600) { id }
    }`, { p: paid.id });
    expect(refunds.body.data.a).toMatchObject({ id: expect.stringMatching(/^re_/), amount: 600 });
    expect(refunds.body.data.b).toBeNull();
    expect(refunds.body.errors[0].extensions).toMatchObject({ code: 'refund_exceeds_remaining', param: 'amount' });
    expect(refunds.body.errors[0].message).toBe('At most 400 (4.00 USD) can still be refunded');
  });

  it('should read what each mutation returns after the mutations before it, not from their cache', async () => {
    const customer = (await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'before@example.com' } })).body.data;
    const paid = (await gql('mutation { createPayment(input: { amount: 1000, currency: "usd", paymentMethod: "pm_card_visa" }) { id } }')).body.data.createPayment;
    const res = await gql(`mutation($p: ID!, $c: ID!, $cs: String!) {
      x: updatePayment(id: $p, input: { description: "d1" }) { amountRefunded refunds { id } }
      y: refundPayment(paymentId: $p, amount: 400) { id }
      z: updatePayment(id: $p, input: { description: "d2" }) { amountRefunded refunds { id } }
      c1: createPayment(input: { amount: 300, currency: "usd", paymentMethod: "pm_card_visa", customerId: $cs }) { id customer { email payments { id } } }
      u: updateCustomer(id: $c, input: { email: "after@example.com" }) { id }
      c2: createPayment(input: { amount: 301, currency: "usd", paymentMethod: "pm_card_visa", customerId: $cs }) { id customer { email payments { id } } }
    }`, { p: paid.id, c: customer.id, cs: customer.id });
    expect(res.body.errors).toBeUndefined();
    const { x, y, z, c1, c2 } = res.body.data;
    expect(x).toEqual({ amountRefunded: 0, refunds: [] });
    expect(z).toEqual({ amountRefunded: 400, refunds: [{ id: y.id }] });
    expect(c1.customer).toEqual({ email: 'before@example.com', payments: [{ id: c1.id }] });
    expect(c2.customer).toEqual({ email: 'after@example.com', payments: [{ id: c2.id }, { id: c1.id }] });
  });

  it('should refuse a subscription sent over HTTP as the client\'s mistake, not an internal error', async () => {
    for (const query of ['subscription { paymentUpdated { id } }', 'subscription { events { id type } }']) {
      const res = await gql(query);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'invalid_parameter', requestId: expect.any(String) }) })]);
      expect(res.body.errors[0].message).toMatch(/graphql-ws/);
    }
  });
});
