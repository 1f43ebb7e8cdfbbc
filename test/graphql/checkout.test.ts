import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import { startTestApp, type TestApp } from '../helpers/app';
import { waitFor, watchStreams } from '../helpers/wait';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const gql = (query: string, variables?: Record<string, unknown>, k = key) => app.request('POST', '/graphql', { key: k, body: { query, variables } });
const card = (number = '4242424242424242') => ({ number, expMonth: 12, expYear: 2034, cvc: '123' });

function wsClient(): Client {
  const ca = app.server.cert;
  class TrustingWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { ca, servername: 'localhost' } as WebSocket.ClientOptions);
    }
  }
  return createClient({ url: `${app.baseUrl.replace('https:', 'wss:')}/graphql`, webSocketImpl: TrustingWebSocket, connectionParams: { authorization: `Bearer ${key}` }, retryAttempts: 0, lazy: true });
}

describe('checkout sessions and payment links over GraphQL', () => {
  it('should create, list, read and expire sessions through the same service as REST', async () => {
    const created = await gql('mutation($i: CreateCheckoutSessionInput!) { createCheckoutSession(input: $i) { id url status mode amount currency expiresAt metadata } }', {
      i: { mode: 'payment', amount: 4200, currency: 'eur', metadata: { cart: 'c1' }, expiresInSeconds: 3600 },
    });
    expect(created.body.errors).toBeUndefined();
    const s = created.body.data.createCheckoutSession;
    expect(s).toMatchObject({ status: 'open', mode: 'payment', amount: 4200, currency: 'EUR', metadata: { cart: 'c1' }, url: `https://pay.example.com/checkout/${s.id}` });
    expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data.expiresAt).toBe(s.expiresAt);
    const listed = await gql('{ checkoutSessions(status: open, mode: payment, pageSize: 100, sortField: amount) { total nodes { id } } }');
    expect(listed.body.data.checkoutSessions.nodes.map((n: { id: string }) => n.id)).toContain(s.id);
    const expired = await gql('mutation($id: ID!) { expireCheckoutSession(id: $id) { status expiredAt } }', { id: s.id });
    expect(expired.body.data.expireCheckoutSession.status).toBe('expired');
    expect((await gql('{ checkoutSession(id: "cs_nope") { id } }')).body.errors[0].extensions).toMatchObject({ code: 'resource_not_found' });
    const bad = await gql('mutation { createCheckoutSession(input: { mode: payment, currency: "eur" }) { id } }');
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'amount' });
  });

  it('should create, list and update payment links', async () => {
    const created = await gql('mutation { createPaymentLink(input: { name: "Tips", amount: 300, currency: "usd" }) { id slug url status } }');
    const l = created.body.data.createPaymentLink;
    expect(l.url).toBe(`https://pay.example.com/pay/${l.slug}`);
    const updated = await gql('mutation($id: ID!) { updatePaymentLink(id: $id, input: { status: inactive, name: "Old tips" }) { name status } }', { id: l.id });
    expect(updated.body.data.updatePaymentLink).toEqual({ name: 'Old tips', status: 'inactive' });
    const listed = await gql('{ paymentLinks(search: "old tips", status: inactive) { total nodes { id } } }');
    expect(listed.body.data.paymentLinks).toEqual({ total: 1, nodes: [{ id: l.id }] });
  });

  it('should batch Payment.checkoutSession and Payment.paymentLink: one lookup each for a whole page', async () => {
    const link = (await app.request('POST', '/v1/payment-links', { key, body: { name: 'Batch', amount: 100, currency: 'usd' } })).body.data;
    for (let i = 0; i < 4; i++) {
      const s = (await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 100 + i, currency: 'usd' } })).body.data;
      await app.request('POST', `/v1/public/checkout-sessions/${s.id}/pay`, { body: { card: card() } });
      await app.request('POST', `/v1/public/payment-links/${link.slug}/pay`, { body: { card: card() } });
    }
    const before = app.sql.length;
    const res = await gql('{ payments(pageSize: 8) { nodes { id checkoutSession { id status } paymentLink { id slug } } } }');
    expect(res.body.errors).toBeUndefined();
    const nodes = res.body.data.payments.nodes as Array<{ checkoutSession: { status: string } | null; paymentLink: { slug: string } | null }>;
    expect(nodes.filter((n) => n.checkoutSession?.status === 'complete')).toHaveLength(4);
    expect(nodes.filter((n) => n.paymentLink?.slug === link.slug)).toHaveLength(4);
    const statements = app.sql.slice(before);
    expect(statements.filter((q) => /FROM [`"]?checkout_sessions/.test(q))).toHaveLength(1);
    expect(statements.filter((q) => /FROM [`"]?payment_links/.test(q))).toHaveLength(1);
  });

  it('should stream checkoutSessionUpdated when a session completes', async () => {
    const s = (await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 999, currency: 'usd' } })).body.data;
    const client = wsClient();
    const streams = watchStreams(app.server.services.bus);
    try {
      const got = new Promise<{ id: string; status: string }>((resolve, reject) => {
        client.subscribe<{ checkoutSessionUpdated: { id: string; status: string } }>(
          { query: 'subscription { checkoutSessionUpdated { id status paymentId } }' },
          { next: (r) => (r.data ? resolve(r.data.checkoutSessionUpdated) : reject(new Error(JSON.stringify(r.errors)))), error: reject, complete: () => undefined },
        );
      });
      await waitFor(() => streams.opened() >= 1, { what: 'the subscription to open' });
      await app.request('POST', `/v1/public/checkout-sessions/${s.id}/pay`, { body: { card: card() } });
      expect(await got).toMatchObject({ id: s.id, status: 'complete' });
    } finally {
      streams.stop();
      await client.dispose();
    }
  });
});
