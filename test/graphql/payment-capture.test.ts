import { startTestApp, type TestApp } from '../helpers/app';
import { wsClient } from '../helpers/graphql-ws';
import { waitFor, watchStreams } from '../helpers/wait';

/** capturePayment and cancelPayment, the new fields and statuses as enums, and live paymentUpdated for each move. */
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  app.request('POST', '/graphql', { key: app.account.testKey, body: { query, variables }, headers });
const FIELDS = 'id status captureMethod amountCapturable amountCaptured nextAction { type url }';
const create = async (input: Record<string, unknown>) => {
  const res = await gql(`mutation($input: CreatePaymentInput!) { createPayment(input: $input) { ${FIELDS} } }`, { input: { amount: 1500, currency: 'eur', ...input } });
  expect(res.body.errors).toBeUndefined();
  return res.body.data.createPayment;
};

describe('GraphQL authorise, capture and cancel', () => {
  it('should authorise with captureMethod manual, capture part of it, and refuse a second capture', async () => {
    const p = await create({ paymentMethod: 'pm_card_visa', captureMethod: 'manual' });
    expect(p).toMatchObject({ status: 'requires_capture', captureMethod: 'manual', amountCapturable: 1500, amountCaptured: 0, nextAction: null });
    const captured = await gql(`mutation($id: ID!) { capturePayment(id: $id, amount: 1000) { ${FIELDS} } }`, { id: p.id }, { 'Idempotency-Key': `gql-cap-${p.id}` });
    expect(captured.body.data.capturePayment).toMatchObject({ status: 'succeeded', amountCaptured: 1000, amountCapturable: 0 });
    const again = await gql(`mutation($id: ID!) { capturePayment(id: $id) { id } }`, { id: p.id });
    expect(again.body.errors[0].extensions.code).toBe('invalid_state');
    const tooMuch = await create({ paymentMethod: 'pm_card_visa', captureMethod: 'manual' });
    const refused = await gql(`mutation($id: ID!) { capturePayment(id: $id, amount: 2000) { id } }`, { id: tooMuch.id });
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'capture_exceeds_authorized', param: 'amount' });
  });

  it('should cancel an authorisation and a payment waiting for 3-D Secure, with each move sent live on paymentUpdated', async () => {
    const client = wsClient(app, app.account.testKey);
    const seen: Array<{ id: string; status: string }> = [];
    const streams = watchStreams(app.server.services.bus);
    const iterator = client.iterate<{ paymentUpdated: { id: string; status: string } }>({ query: 'subscription { paymentUpdated { id status } }' });
    const collected = (async () => {
      for await (const r of iterator) if (r.data) seen.push(r.data.paymentUpdated);
    })();
    try {
      await waitFor(() => streams.opened() >= 1, { what: 'the subscription to start' });
      streams.stop();
      const auth = await create({ paymentMethod: 'pm_card_visa', captureMethod: 'manual' });
      const challenged = await create({ paymentMethod: 'card', card: { number: '4000000000003220', expMonth: 12, expYear: 2031, cvc: '123' } });
      expect(challenged).toMatchObject({ status: 'requires_action', nextAction: { type: 'redirect_to_url' } });
      for (const id of [auth.id, challenged.id]) {
        const res = await gql(`mutation($id: ID!) { cancelPayment(id: $id) { ${FIELDS} } }`, { id });
        expect(res.body.data.cancelPayment).toMatchObject({ status: 'canceled', amountCapturable: 0, nextAction: null });
      }
      await waitFor(() => seen.length >= 4, { what: 'four live payment moves' });
      expect(seen).toEqual(expect.arrayContaining([
        { id: auth.id, status: 'requires_capture' }, { id: auth.id, status: 'canceled' },
        { id: challenged.id, status: 'requires_action' }, { id: challenged.id, status: 'canceled' },
      ]));
    } finally {
      await iterator.return?.();
      await collected.catch(() => undefined);
      await client.dispose();
    }
  });
});
