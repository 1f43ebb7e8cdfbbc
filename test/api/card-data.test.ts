import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const PAN = '378282246310005'; // Amex test number, Luhn-valid
const CVC = '7391';
const DECLINE_PAN = '4000000000009995';
const DECLINE_CVC = '8264';

/** The value as a token of its own (JSON value or text), not inside a longer random id. */
const standalone = (value: string) => new RegExp(`(?<![0-9A-Za-z])${value}(?![0-9A-Za-z])`);

describe('card data', () => {
  it('should keep card numbers and CVCs out of every table, the logs and the responses', async () => {
    const key = app.account.testKey;
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: 'pan@example.com' } });
    const responses: string[] = [];
    const ok = await app.request('POST', '/v1/payments', {
      key, body: { amount: 4200, currency: 'usd', paymentMethod: 'card', customerId: customer.body.data.id, card: { number: PAN, expMonth: 3, expYear: 2031, cvc: CVC } },
    });
    expect(ok.body.data.status).toBe('succeeded');
    responses.push(ok.text);
    const declined = await app.request('POST', '/v1/payments', {
      key, body: { amount: 4300, currency: 'usd', paymentMethod: 'card', card: { number: DECLINE_PAN, expMonth: 3, expYear: 2031, cvc: DECLINE_CVC } },
    });
    expect(declined.body.data.status).toBe('failed');
    responses.push(declined.text);
    const saved = await app.request('POST', `/v1/customers/${customer.body.data.id}/payment-methods`, {
      key, body: { card: { number: PAN, expMonth: 3, expYear: 2031, cvc: CVC } },
    });
    expect(saved.status).toBe(201);
    responses.push(saved.text);
    const invalid = await app.request('POST', '/v1/payments', {
      key, body: { amount: 1, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424241', expMonth: 3, expYear: 2031, cvc: CVC } },
    });
    expect(invalid.status).toBe(400);
    responses.push(invalid.text);
    await app.request('POST', '/v1/refunds', { key, body: { paymentId: ok.body.data.id } });

    const { db } = app.server.services;
    const tables = (await db.sequelize.getQueryInterface().showAllTables()) as unknown as Array<string | { tableName: string }>;
    let dump = '';
    for (const t of tables) {
      const name = typeof t === 'string' ? t : t.tableName;
      const rows = await db.select(`SELECT * FROM ${name}`);
      dump += JSON.stringify(rows);
    }
    expect(dump.length).toBeGreaterThan(1000);
    expect(dump).toContain('0005'); // last4 is kept: the scan does see card-derived data
    const logs = app.logs.join('');
    for (const text of [dump, logs, ...responses]) {
      expect(text).not.toContain(PAN);
      expect(text).not.toContain(DECLINE_PAN);
      expect(text).not.toMatch(standalone(CVC));
      expect(text).not.toMatch(standalone(DECLINE_CVC));
    }
  });
});
