import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: 'true', PUBLIC_URL: 'https://pay.example.com' } });
});
afterAll(() => app.stop());

describe('behind a trusted proxy', () => {
  it('should take the client address from the entry the proxy added, not one the client wrote', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      // The client forges the leftmost entry each time; the proxy appends the address it saw.
      const res = await app.request('GET', '/v1/customers', {
        headers: { 'X-Forwarded-For': `203.0.113.${i + 1}, 198.51.100.7`, 'X-Forwarded-Proto': 'https' },
      });
      statuses.push(res.status);
    }
    // Three requests a minute per address without a valid key: the fourth is refused.
    expect(statuses).toEqual([401, 401, 401, 429]);
    // Another address the proxy saw has its own budget.
    const other = await app.request('GET', '/v1/customers', { headers: { 'X-Forwarded-For': '198.51.100.8', 'X-Forwarded-Proto': 'https' } });
    expect(other.status).toBe(401);
  });
});
