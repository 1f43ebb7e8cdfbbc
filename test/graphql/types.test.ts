import { startTestApp, type TestApp } from '../helpers/app';
import { EVENT_TYPES } from '../../src/modules/events/event.service';

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

const pick = (o: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));

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
    expect(await enumValues('PaymentStatus')).toEqual(['pending', 'requires_action', 'requires_capture', 'succeeded', 'failed', 'canceled', 'requires_review']);
    expect((await fieldTypes('Payment')).captureMethod).toEqual({ kind: 'ENUM', name: 'CaptureMethod' });
    expect((await fieldTypes('Refund')).status).toEqual({ kind: 'ENUM', name: 'RefundStatus' });
    expect(await enumValues('RefundStatus')).toEqual(['pending', 'succeeded', 'failed', 'requires_review']);
    expect((await fieldTypes('WebhookEndpoint')).status).toEqual({ kind: 'ENUM', name: 'WebhookEndpointStatus' });
    expect(await enumValues('WebhookEndpointStatus')).toEqual(['enabled', 'disabled']);
    expect((await fieldTypes('WebhookDeliveryAttempt')).status).toEqual({ kind: 'ENUM', name: 'WebhookDeliveryAttemptStatus' });
    expect((await fieldTypes('Price')).type).toEqual({ kind: 'ENUM', name: 'PriceType' });
    expect(await enumValues('PriceType')).toEqual(['one_time', 'recurring']);
    expect((await fieldTypes('Recurring')).interval).toEqual({ kind: 'ENUM', name: 'RecurringInterval' });
    expect((await fieldTypes('GatewayTransaction')).kind).toEqual({ kind: 'ENUM', name: 'GatewayTransactionKind' });
    expect(await enumValues('GatewayTransactionKind')).toEqual(['charge', 'refund', 'status', 'save_card', 'capture', 'cancel']);

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
  it('should have every field of each REST object, with the same values', async () => {
    const key = app.account.testKey;
    const rest = async (method: string, path: string, body?: unknown) => (await app.request(method, path, { key, body })).body.data;
    const customer = await rest('POST', '/v1/customers', { email: 'fields@example.com' });
    const method = await rest('POST', `/v1/customers/${customer.id}/payment-methods`, { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } });
    const payment = await rest('POST', '/v1/payments', { amount: 800, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.id });
    const refund = await rest('POST', '/v1/refunds', { paymentId: payment.id, amount: 100 });
    const [call] = await rest('GET', `/v1/payments/${payment.id}/gateway-transactions`);
    const product = await rest('POST', '/v1/products', { name: 'Fields' });
    const price = await rest('POST', '/v1/prices', { productId: product.id, unitAmount: 100, currency: 'usd', recurring: { interval: 'month' } });
    const gateway = await rest('POST', '/v1/gateways', { name: 'Fields', type: 'simulator' });
    const routing = await (async () => {
      await app.request('PUT', '/v1/routing', { key, body: { rules: [{ name: 'r', when: { currency: ['USD'], amountGte: 1, cardBrand: ['visa'], metadata: { a: 'b' } }, strategy: 'weighted', gateways: [{ gatewayId: gateway.id, weight: 2 }] }], fallback: [gateway.id], maxAttempts: 2 } });
      return rest('GET', '/v1/routing');
    })();
    const decision = await rest('POST', '/v1/routing/simulate', { amount: 100, currency: 'usd' });
    const fx = await rest('GET', '/v1/fx-rates');
    const endpoint = await rest('POST', '/v1/webhook-endpoints', { url: 'https://127.0.0.1:9/fields', events: ['customer.created'] });
    const event = (await rest('GET', '/v1/events?type=customer.created')).find((e: { data: { object: { id: string } } }) => e.data.object.id === customer.id);
    await app.request('POST', `/v1/events/${event.id}/resend`, { key, body: {} });
    const resent = await rest('POST', `/v1/events/${event.id}/resend`, {});
    await app.server.services.webhooks.deliveries.deliverDue(100); // to a closed port: failed attempts
    const [attempt] = await rest('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`);
    expect(attempt).toBeDefined();

    const objects: Array<[string, Record<string, unknown>]> = [
      ['Customer', customer], ['PaymentMethod', method], ['SavedCard', method.card], ['Payment', payment],
      ['PaymentMethodDetails', payment.paymentMethodDetails], ['PaymentAttempt', payment.attempts[0]], ['Refund', refund],
      ['GatewayTransaction', call], ['Product', product], ['Price', price], ['Recurring', price.recurring], ['Gateway', gateway],
      ['RoutingRuleSet', routing], ['RoutingRule', routing.rules[0]], ['RoutingConditions', routing.rules[0].when],
      ['RoutingRuleGateway', routing.rules[0].gateways[0]], ['RoutingDecision', decision], ['FxRateSet', fx], ['FxRate', fx.demoRates[0]],
      ['WebhookEndpoint', endpoint], ['WebhookDeliveryAttempt', attempt], ['Event', event], ['EventResend', resent],
    ];
    for (const [type, object] of objects) {
      const fields = Object.keys(await fieldTypes(type));
      expect([type, Object.keys(object).filter((k) => !fields.includes(k))]).toEqual([type, []]);
    }

    // The fields that were missing, read back with REST's values.
    const read = await gql(`query($c: ID!, $e: ID!) {
      customer(id: $c) { testClockId }
      webhookEndpoint(id: $e) { deliveries { nodes { id object livemode endpointId eventId eventType status createdAt updatedAt } } }
      routing { object livemode rules { name strategy when { currency country amountGte amountLte cardBrand metadata } } fallback maxAttempts updatedAt }
    }`, { c: customer.id, e: endpoint.id });
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.customer).toEqual({ testClockId: customer.testClockId });
    const node = read.body.data.webhookEndpoint.deliveries.nodes.find((a: { id: string }) => a.id === attempt.id);
    expect(node).toEqual({ ...pick(attempt, ['id', 'object', 'livemode', 'endpointId', 'eventId', 'status', 'createdAt', 'updatedAt']), eventType: 'customer.created' });
    const { gateways, ...rule } = routing.rules[0];
    expect(read.body.data.routing).toEqual({ ...routing, rules: [{ ...rule, when: { country: null, amountLte: null, ...rule.when } }] });
    expect((await gql('{ routing { rules { gateways { gatewayId weight } } } }')).body.data.routing).toEqual({ rules: [{ gateways }] });
    const resend = await gql('mutation($id: ID!) { resendEvent(id: $id) { object eventId deliveriesQueued } }', { id: event.id });
    expect(resend.body.data.resendEvent).toEqual({ object: 'event_resend', eventId: event.id, deliveriesQueued: 1 });
  });

  it('should type closed sets as enums: gateway and event types, sort fields and directions', async () => {
    const key = app.account.testKey;
    // Gateway types: REST's values, in the answer, the input and the filter.
    expect(await enumValues('GatewayType')).toEqual(['simulator', 'stripe']);
    expect((await fieldTypes('Gateway')).type).toEqual({ kind: 'ENUM', name: 'GatewayType' });
    expect((await fieldTypes('CreateGatewayInput')).type).toEqual({ kind: 'ENUM', name: 'GatewayType' });
    expect((await fieldTypes('GatewayTransaction')).gatewayType).toEqual({ kind: 'ENUM', name: 'GatewayType' });
    const gateway = await gql('mutation { createGateway(input: { name: "Enum", type: simulator }) { id type } }');
    expect(gateway.body.data.createGateway.type).toBe('simulator');
    const filtered = await gql('{ sim: gateways(type: simulator) { total } stripe: gateways(type: stripe) { total } }');
    const simulators = (await app.request('GET', '/v1/gateways?type=simulator', { key })).body.meta.total;
    expect(filtered.body.data).toEqual({ sim: { total: simulators }, stripe: { total: 0 } });
    expect((await gql('mutation { createGateway(input: { name: "X", type: paypal }) { id } }')).body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'type' });

    // Event types: a closed set that takes and gives REST's exact strings (a scalar, since an
    // enum value cannot hold the dot); anything else is refused while the document is validated.
    const described = await gql('{ __type(name: "EventTypeName") { kind description } }');
    expect(described.body.data.__type.kind).toBe('SCALAR');
    for (const type of EVENT_TYPES) expect(described.body.data.__type.description).toContain(type);
    expect((await fieldTypes('Event')).type).toEqual({ kind: 'SCALAR', name: 'EventTypeName' });
    // An attempt may carry a test ping, which is no event type: the event types and "ping".
    expect((await fieldTypes('WebhookDeliveryAttempt')).eventType).toEqual({ kind: 'SCALAR', name: 'WebhookDeliveryEventType' });
    expect((await fieldTypes('WebhookEndpoint')).events).toEqual({ kind: 'SCALAR', name: 'WebhookEventSelector' });
    const payment = await app.request('POST', '/v1/payments', { key, body: { amount: 600, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const events = await gql('query($t: EventTypeName) { a: events(type: "payment.succeeded", pageSize: 100) { nodes { type data } } b: events(type: $t) { total } }', { t: 'invoice.voided' });
    expect(events.body.errors).toBeUndefined();
    const mine = events.body.data.a.nodes.find((e: { data: { object: { id: string } } }) => e.data.object.id === payment.body.data.id);
    expect(mine.type).toBe('payment.succeeded');
    expect(events.body.data.a.nodes.every((e: { type: string }) => e.type === 'payment.succeeded')).toBe(true);
    expect(events.body.data.b.total).toBe(0);
    for (const refused of ['"payment.*"', '"*"', '"payment.refunded"', 'payment_succeeded']) {
      const error = (await gql(`{ events(type: ${refused}) { total } }`)).body.errors[0];
      expect([refused, error.extensions]).toEqual([refused, expect.objectContaining({ code: 'invalid_parameter', param: 'type' })]);
    }
    const viaVariable = (await gql('query($t: EventTypeName) { events(type: $t) { total } }', { t: 'payment.*' })).body.errors[0];
    expect(viaVariable.extensions).toMatchObject({ code: 'invalid_parameter', param: 't' });
    expect(viaVariable.message).toContain('no wildcards');
    // A webhook endpoint's events: the same strings, and "*" as in REST.
    const endpoint = await gql('mutation { createWebhookEndpoint(input: { url: "https://127.0.0.1:9/enum", events: ["payment.succeeded", "*"] }) { id events } }');
    expect(endpoint.body.data.createWebhookEndpoint.events).toEqual(['payment.succeeded', '*']);
    const viaRest = await app.request('GET', `/v1/webhook-endpoints/${endpoint.body.data.createWebhookEndpoint.id}`, { key });
    expect(viaRest.body.data.events).toEqual(['payment.succeeded', '*']);
    const wildcard = (await gql('mutation { createWebhookEndpoint(input: { url: "https://127.0.0.1:9/enum", events: ["payment.*"] }) { id } }')).body.errors[0];
    expect(wildcard.extensions).toMatchObject({ code: 'invalid_parameter', param: 'events[0]' });

    // Sort fields: each list's own enum, REST's sortField values; the direction asc or desc.
    const sorts: Record<string, string[]> = {
      customers: ['createdAt'], products: ['createdAt', 'name'], prices: ['createdAt', 'unitAmount', 'amount'], events: ['createdAt'],
      payments: ['createdAt', 'amount'], refunds: ['createdAt', 'amount'], gateways: ['createdAt', 'name'], paymentMethods: ['createdAt'],
      gatewayTransactions: ['createdAt'], webhookEndpoints: ['createdAt'],
    };
    const query = await gql('{ __schema { queryType { fields { name args { name type { kind name } } } } } }');
    const fields = query.body.data.__schema.queryType.fields as Array<{ name: string; args: Array<{ name: string; type: { kind: string; name: string } }> }>;
    for (const [list, expected] of Object.entries(sorts)) {
      const args = fields.find((f) => f.name === list)!.args;
      const sortField = args.find((a) => a.name === 'sortField')!.type;
      expect([list, sortField.kind]).toEqual([list, 'ENUM']);
      expect([list, await enumValues(sortField.name)]).toEqual([list, expected]);
      expect([list, args.find((a) => a.name === 'sortDirection')!.type]).toEqual([list, { kind: 'ENUM', name: 'SortDirection' }]);
    }
    const deliveriesArgs = await gql('{ __type(name: "WebhookEndpoint") { fields { name args { name type { name } } } } }');
    const deliveries = deliveriesArgs.body.data.__type.fields.find((f: { name: string }) => f.name === 'deliveries');
    expect(deliveries.args.map((a: { name: string; type: { name: string } }) => [a.name, a.type.name])).toEqual([
      ['page', 'Int'], ['pageSize', 'Int'], ['first', 'Int'], ['after', 'ID'], ['last', 'Int'], ['before', 'ID'],
      ['sortField', 'WebhookDeliveryAttemptSortField'], ['sortDirection', 'SortDirection'], ['createdAfter', 'DateTime'], ['createdBefore', 'DateTime'],
      ['status', 'WebhookDeliveryAttemptStatus'], ['statusIn', null], ['eventId', 'String'],
    ]);
    expect(await enumValues('SortDirection')).toEqual(['asc', 'desc']);
    const sorted = await gql('{ payments(sortField: amount, sortDirection: asc, pageSize: 100) { nodes { amount } } }');
    const amounts = sorted.body.data.payments.nodes.map((p: { amount: number }) => p.amount);
    expect(amounts).toEqual([...amounts].sort((a, b) => a - b));
    for (const refused of ['{ payments(sortField: status) { total } }', '{ payments(sortField: "amount") { total } }']) {
      expect((await gql(refused)).body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'sortField' });
    }
    expect((await gql('{ payments(sortDirection: up) { total } }')).body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'sortDirection' });
  });

  it('should type the routing rule set: typed input and output, refused like PUT /v1/routing', async () => {
    const key = app.account.liveKey;
    const live = (query: string, variables: Record<string, unknown> = {}) => app.request('POST', '/graphql', { key, body: { query, variables } });
    const gateway = (await live('mutation { createGateway(input: { name: "Routed", type: simulator, currencies: ["usd", "eur"] }) { id } }')).body.data.createGateway.id as string;
    // Two reads make the whole rule set: the cost limit counts each list of a rule as 100 entries.
    const fields = '{ object livemode rules { name when { currency country amountGte amountLte cardBrand metadata } strategy } fallback maxAttempts updatedAt }';
    const gatewayFields = '{ rules { gateways { gatewayId weight } } }';
    const set = await live(`mutation { setRouting(config: {
      rules: [{ name: "eu", when: { currency: ["eur"], country: ["de"], amountGte: 100, amountLte: 5000000000, cardBrand: [visa, mastercard], metadata: { channel: "web" } },
                strategy: weighted, gateways: [{ gatewayId: "${gateway}", weight: 70 }] },
              { name: "rest", strategy: priority, gateways: [{ gatewayId: "${gateway}" }] }],
      fallback: ["${gateway}"], maxAttempts: 2 }) ${fields} }`);
    expect(set.body.errors).toBeUndefined();
    const expected = {
      object: 'routing', livemode: true,
      rules: [
        { name: 'eu', when: { currency: ['EUR'], country: ['DE'], amountGte: 100, amountLte: 5000000000, cardBrand: ['visa', 'mastercard'], metadata: { channel: 'web' } }, strategy: 'weighted' },
        { name: 'rest', when: null, strategy: 'priority' },
      ],
      fallback: [gateway], maxAttempts: 2, updatedAt: expect.stringMatching(/Z$/),
    };
    const expectedGateways = { rules: [{ gateways: [{ gatewayId: gateway, weight: 70 }] }, { gateways: [{ gatewayId: gateway, weight: null }] }] };
    expect(set.body.data.setRouting).toEqual(expected);
    expect((await live(`{ routing ${fields} }`)).body.data.routing).toEqual(expected);
    expect((await live(`{ routing ${gatewayFields} }`)).body.data.routing).toEqual(expectedGateways);
    // The same rule set as REST reads it.
    const rest = (await app.request('GET', '/v1/routing', { key })).body.data;
    expect(rest.rules[0]).toEqual({ name: 'eu', when: expected.rules[0].when, strategy: 'weighted', gateways: [{ gatewayId: gateway, weight: 70 }] });
    // The types refuse what is outside a closed set, named by its path inside the argument.
    const strategy = await live(`mutation { setRouting(config: { rules: [{ name: "x", strategy: fastest, gateways: [{ gatewayId: "${gateway}" }] }] }) { maxAttempts } }`);
    expect(strategy.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'rules[0].strategy' });
    const brand = await live('mutation($c: RoutingRuleSetInput!) { setRouting(config: $c) { maxAttempts } }', { c: { rules: [{ name: 'x', when: { cardBrand: ['maestro'] }, strategy: 'priority', gateways: [{ gatewayId: gateway }] }] } });
    expect(brand.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'rules[0].when.cardBrand[0]' });
    // The service's own rules, as over REST.
    const unknown = await live('mutation($c: RoutingRuleSetInput!) { setRouting(config: $c) { maxAttempts } }', { c: { rules: [{ name: 'x', strategy: 'priority', gateways: [{ gatewayId: 'gw_nope' }] }] } });
    expect(unknown.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'rules[0].gateways[0].gatewayId' });
    const weight = await live('mutation($c: RoutingRuleSetInput!) { setRouting(config: $c) { maxAttempts } }', { c: { rules: [{ name: 'x', strategy: 'weighted', gateways: [{ gatewayId: gateway }] }] } });
    expect(weight.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'rules[0].gateways[0].weight' });
    expect((await live(`{ routing ${fields} }`)).body.data.routing).toEqual(expected);
    // Simulation: a card brand from the enum, reasons from theirs.
    expect((await fieldTypes('RoutingSimulationInput')).cardBrand).toEqual({ kind: 'ENUM', name: 'CardBrand' });
    expect((await fieldTypes('RoutingSkip')).reason).toEqual({ kind: 'ENUM', name: 'RoutingSkipReason' });
    expect(await enumValues('RoutingSkipReason')).toEqual(['unknown', 'disabled', 'currency', 'circuit_open']);
    const simulated = await live('{ simulateRouting(input: { amount: 200, currency: "eur", country: "DE", cardBrand: visa, metadata: { channel: "web" } }) { rule gateways } }');
    expect(simulated.body.data.simulateRouting).toEqual({ rule: 'eu', gateways: [gateway] });
  });
});
