import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { loggedSql } from '../helpers/plans';
import { CARD, makeObjects, restClient, type Objects } from '../helpers/graphql-objects';

type Json = Record<string, any>;

let app: TestApp;
let key: string;
let objects: Objects;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
  objects = await makeObjects(app, key);
});
afterAll(() => app.stop());

const gql = async (query: string, variables: Json = {}, k = key) => (await app.request('POST', '/graphql', { key: k, body: { query, variables } })).body as { data?: Json; errors?: Json[] };
const ok = async (query: string, variables: Json = {}, k = key) => {
  const body = await gql(query, variables, k);
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data as Json;
};

/** The statements the app ran while `run` ran, less the key look-up and transaction markers. */
async function statementsOf<T>(run: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const before = app.sql.length;
  const result = await run();
  const statements = app.sql.slice(before).map(loggedSql).filter((q) => !/^(BEGIN|COMMIT|ROLLBACK|START TRANSACTION)\b/i.test(q) && !/\bFROM api_keys k JOIN accounts\b/.test(q));
  return { result, statements };
}

describe(`GraphQL typed links (${DIALECT})`, () => {
  it('should follow each id field to its object', async () => {
    const data = await ok(`query($r: ID!, $p: ID!, $s: ID!, $c: ID!, $sp: ID!) {
      refund(id: $r) { payment { id } }
      payment(id: $p) {
        invoice { id } subscription { id } gateway { id name }
        gatewayTransactions { id kind payment { id } refund { id } gateway { id } }
      }
      paid: payment(id: $sp) { invoice { id } subscription { id } }
      subscription(id: $s) {
        price { id unitAmount }
        latestInvoice { id subscription { id } latestPayment { id } pdfUrl }
        defaultPaymentMethod { id }
        payments { id }
        gatewayTransactions { kind payment { id } }
      }
      customer(id: $c) { defaultPaymentMethod { id isDefault } }
    }`, { r: objects.refund, p: objects.payment, s: objects.subscription, c: objects.customer, sp: objects.subscriptionPayment });

    expect(data.refund.payment).toEqual({ id: objects.payment });
    // A one-off payment: no invoice, no subscription (null, no error); its gateway is the account's.
    expect(data.payment).toMatchObject({ invoice: null, subscription: null, gateway: { id: objects.gateway, name: 'Sim' } });
    const calls = data.payment.gatewayTransactions as Json[];
    expect(calls.find((c) => c.kind === 'charge')).toEqual({ id: objects.gatewayTransaction, kind: 'charge', payment: { id: objects.payment }, refund: null, gateway: { id: objects.gateway } });
    expect(calls.find((c) => c.kind === 'refund')).toEqual({ id: objects.refundTransaction, kind: 'refund', payment: { id: objects.payment }, refund: { id: objects.refund }, gateway: { id: objects.gateway } });
    expect(data.paid).toEqual({ invoice: { id: objects.invoice }, subscription: { id: objects.subscription } });

    expect(data.subscription.price).toEqual({ id: objects.price, unitAmount: 900 });
    expect(data.subscription.latestInvoice).toMatchObject({ id: objects.invoice, subscription: { id: objects.subscription }, latestPayment: { id: objects.subscriptionPayment } });
    expect(data.subscription.defaultPaymentMethod).toEqual({ id: objects.paymentMethod });
    expect(data.subscription.payments).toEqual([{ id: objects.subscriptionPayment }]);
    expect(data.subscription.gatewayTransactions).toEqual([{ kind: 'charge', payment: { id: objects.subscriptionPayment } }]);
    expect(data.customer.defaultPaymentMethod).toEqual({ id: objects.paymentMethod, isDefault: true });

    // pdfUrl is the REST route of the invoice's PDF, read with the key.
    const pdfUrl = new URL(data.subscription.latestInvoice.pdfUrl as string);
    expect(pdfUrl.pathname).toBe(`/v1/invoices/${objects.invoice}/pdf`);
    const pdf = await app.request('GET', pdfUrl.pathname, { key });
    expect(pdf.status).toBe(200);
    expect(pdf.headers['content-type']).toMatch(/application\/pdf/);
  });

  it('should give an event its delivery attempts, and an attempt its event and endpoint', async () => {
    const data = await ok(`query($e: ID!, $w: ID!) {
      event(id: $e) { deliveries { id endpointId event { id } endpoint { id url } } }
      webhookEndpoint(id: $w) { deliveries { nodes { id event { id type } } } }
    }`, { e: objects.event, w: objects.webhookEndpoint });
    expect(data.event.deliveries).toEqual([{
      id: objects.webhookAttempt, endpointId: objects.webhookEndpoint, event: { id: objects.event }, endpoint: { id: objects.webhookEndpoint, url: 'https://127.0.0.1:9/nodes' },
    }]);
    expect(data.webhookEndpoint.deliveries.nodes).toEqual([{ id: objects.webhookAttempt, event: { id: objects.event, type: 'customer.created' } }]);
    const refused = await gql('query($e: ID!) { event(id: $e) { deliveries(first: 0) { id } } }', { e: objects.event });
    expect(refused.errors![0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'first' });

    // A deleted endpoint: the attempt's link is null (as webhookEndpoint(id:) finds nothing), the log stays.
    const account = await app.createAccount();
    const rest = restClient(app, account.testKey);
    const endpoint = await rest('POST', '/v1/webhook-endpoints', { url: 'https://127.0.0.1:9/gone', events: ['customer.created'] });
    await rest('POST', '/v1/customers', { email: 'gone@example.com' });
    await app.server.services.webhooks.deliveries.deliverDue(100);
    await rest('DELETE', `/v1/webhook-endpoints/${endpoint.id}`);
    const [event] = await rest('GET', '/v1/events?type=customer.created');
    const after = await ok('query($e: ID!) { event(id: $e) { deliveries { endpointId endpoint { id } event { id } } } }', { e: event.id }, account.testKey);
    expect(after.event.deliveries).toEqual([{ endpointId: endpoint.id, endpoint: null, event: { id: event.id } }]);
  });

  it('should type an event\'s data.object, as it was when the event was written', async () => {
    const { events } = await ok(`{ events(pageSize: 100) { nodes { type data dataObject {
      __typename
      ... on Customer { id email }
      ... on Payment { id amount status customer { id } }
      ... on Refund { id payment { id } }
      ... on BillingSubscription { id price { id } }
      ... on Invoice { id number }
      ... on Product { id name }
      ... on Price { id unitAmount }
      ... on TaxRate { id percentage }
      ... on PaymentLink { id slug }
    } } } }`);
    const expected: Record<string, string> = {
      customer: 'Customer', payment: 'Payment', refund: 'Refund', subscription: 'BillingSubscription', invoice: 'Invoice',
      product: 'Product', price: 'Price', tax_rate: 'TaxRate', payment_link: 'PaymentLink',
    };
    const nodes = events.nodes as Array<{ type: string; data: Json; dataObject: Json | null }>;
    const seen = new Set<string>();
    for (const node of nodes) {
      const kind = node.type.slice(0, node.type.lastIndexOf('.'));
      expect({ type: node.type, typename: node.dataObject?.__typename }).toEqual({ type: node.type, typename: expected[kind] });
      expect(node.dataObject!.id).toBe(node.data.object.id);
      seen.add(node.dataObject!.__typename);
    }
    expect([...seen].sort()).toEqual(Object.values(expected).sort());
    // The payment as it was at payment.succeeded (before the refund), with its link read now.
    const succeeded = nodes.find((n) => n.type === 'payment.succeeded' && n.data.object.id === objects.payment)!;
    expect(succeeded.dataObject).toEqual({ __typename: 'Payment', id: objects.payment, amount: 1500, status: 'succeeded', customer: { id: objects.customer } });
    expect(nodes.find((n) => n.type === 'refund.created')!.dataObject).toEqual({ __typename: 'Refund', id: objects.refund, payment: { id: objects.payment } });
  });

  it('should answer a link the key may not read with null and the permission_denied of its type\'s query', async () => {
    const limited = await restClient(app, key)('POST', '/v1/api-keys', { permissions: ['payments:read'] });
    const res = await gql('query($p: ID!) { payment(id: $p) { id subscription { id } invoice { id } gateway { id } } }', { p: objects.subscriptionPayment }, limited.secret);
    expect(res.data).toEqual({ payment: { id: objects.subscriptionPayment, subscription: null, invoice: null, gateway: null } });
    expect(res.errors!.map((e) => [e.path.join('.'), e.extensions.code]).sort()).toEqual([
      ['payment.gateway', 'permission_denied'], ['payment.invoice', 'permission_denied'], ['payment.subscription', 'permission_denied'],
    ]);
    // The built-in simulator is no gateway row: null, without an error.
    const other = await app.createAccount();
    const payment = await restClient(app, other.testKey)('POST', '/v1/payments', { amount: 100, currency: 'usd', paymentMethod: 'pm_card_visa' });
    expect(payment.gatewayId).toBe('gw_builtin_simulator');
    expect(await gql('query($p: ID!) { payment(id: $p) { gateway { id } } }', { p: payment.id }, other.testKey)).toMatchObject({ data: { payment: { gateway: null } } });
    expect((await gql('query($p: ID!) { payment(id: $p) { gateway { id } } }', { p: payment.id }, other.testKey)).errors).toBeUndefined();
  });

  it('should batch a page of subscriptions\' links and lists: one statement per field, whatever the page', async () => {
    const account = await app.createAccount();
    const rest = restClient(app, account.testKey);
    const product = await rest('POST', '/v1/products', { name: 'Batch plan' });
    const price = await rest('POST', '/v1/prices', { productId: product.id, unitAmount: 500, currency: 'usd', recurring: { interval: 'month' } });
    const made: Json[] = [];
    for (let i = 0; i < 4; i++) {
      const customer = await rest('POST', '/v1/customers', { email: `subs${i}@example.com` });
      const card = await rest('POST', `/v1/customers/${customer.id}/payment-methods`, { card: CARD });
      made.push(await rest('POST', '/v1/subscriptions', { customerId: customer.id, priceId: price.id, paymentMethodId: card.id }));
    }
    const query = (pageSize: number) => `{ subscriptions(pageSize: ${pageSize}) { nodes {
      id price { id } latestInvoice { id latestPayment { id } } defaultPaymentMethod { id } payments { id } gatewayTransactions(first: 5) { kind }
    } } }`;
    const { result: res, statements } = await statementsOf(() => gql(query(10), {}, account.testKey));
    expect(res.errors).toBeUndefined();
    const nodes = res.data!.subscriptions.nodes as Json[];
    expect(nodes).toHaveLength(4);
    for (const node of nodes) {
      const sub = made.find((m) => m.id === node.id)!;
      expect(node).toEqual({
        id: sub.id, price: { id: price.id }, latestInvoice: { id: sub.latestInvoiceId, latestPayment: { id: node.payments[0].id } },
        defaultPaymentMethod: { id: sub.defaultPaymentMethodId }, payments: [{ id: expect.stringMatching(/^pay_/) }], gatewayTransactions: [{ kind: 'charge' }],
      });
    }
    // The page, its plans, then one statement per field (prices, saved cards, payments, gateway
    // calls, invoices and their lines, the invoices' latest payments): as many for one subscription.
    expect(statements).toHaveLength(9);
    expect(statements.filter((q) => /\bFROM payments p JOIN gateway_transactions\b/.test(q))).toHaveLength(1);
    const one = await statementsOf(() => gql(query(1), {}, account.testKey));
    expect(one.result.errors).toBeUndefined();
    expect(one.statements).toHaveLength(9);
    // Without webhook_endpoints:read, an event's deliveries are refused as the endpoints' logs are.
    const eventsOnly = await restClient(app, key)('POST', '/v1/api-keys', { permissions: ['events:read', 'customers:read'] });
    const refused = await gql('query($e: ID!) { event(id: $e) { id deliveries { id } } }', { e: objects.event }, eventsOnly.secret);
    expect(refused.data).toEqual({ event: { id: objects.event, deliveries: null } });
    expect(refused.errors![0]).toMatchObject({ path: ['event', 'deliveries'], extensions: { code: 'permission_denied' } });
  });

  it('should read a three-level query over 50 customers in a handful of statements, as many as over 2', async () => {
    const account = await app.createAccount();
    const rest = restClient(app, account.testKey);
    const gateway = await rest('POST', '/v1/gateways', { name: 'Batch', type: 'simulator' });
    const customers: string[] = [];
    for (let i = 0; i < 50; i++) {
      const customer = await rest('POST', '/v1/customers', { email: `batch${i}@example.com` });
      const payment = await rest('POST', '/v1/payments', { amount: 1000 + i, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.id });
      if (i % 2 === 0) await rest('POST', '/v1/refunds', { paymentId: payment.id, amount: 10 });
      customers.push(customer.id);
    }
    const query = (pageSize: number) => `{ customers(pageSize: ${pageSize}) { nodes { id payments { id refunds { id payment { id } } gateway { name } } } } }`;
    const { result: res, statements } = await statementsOf(() => gql(query(50), {}, account.testKey));
    expect(res.errors).toBeUndefined();
    const nodes = res.data!.customers.nodes as Json[];
    expect(nodes.map((n) => n.id).sort()).toEqual([...customers].sort());
    const payments = nodes.flatMap((n) => n.payments as Json[]);
    expect(payments).toHaveLength(50);
    for (const p of payments) {
      expect(p.gateway).toEqual({ name: 'Batch' });
      for (const r of p.refunds) expect(r.payment).toEqual({ id: p.id });
    }
    expect(payments.filter((p) => p.refunds.length === 1)).toHaveLength(25);
    // The page (and its customers' credit balances), the payments of all customers, their
    // refunds, the refunds' payments, the gateways: one statement each, not one per object.
    expect(statements).toHaveLength(6);
    for (const table of ['customers', 'customer_balances', 'payments', 'refunds', 'gateways']) {
      expect({ table, reads: statements.filter((q) => new RegExp(`\\bFROM [\`"]?${table}\\b`).test(q)).length }).toEqual({ table, reads: table === 'payments' ? 2 : 1 });
    }
    const small = await statementsOf(() => gql(query(2), {}, account.testKey));
    expect(small.result.errors).toBeUndefined();
    expect(small.statements).toHaveLength(statements.length);
    expect(gateway.id).toMatch(/^gw_/);
  });
});
