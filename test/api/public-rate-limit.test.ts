import { startTestApp } from '../helpers/app';

describe('public routes and the client IP limit', () => {
  it('should limit public reads and pays per client IP, whatever the key of the merchant', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
    const card = { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' };
    try {
      const l = (await limited.request('POST', '/v1/payment-links', { key: limited.account.testKey, body: { name: 'Limited', amount: 100, currency: 'usd' } })).body.data;
      const answers = [];
      // The routers match paths without regard to case, and so does what makes a route public:
      // the third read, in capitals, is served without a key and counted against the address.
      for (const path of ['public/payment-links', 'public/payment-links', 'Public/Payment-Links', 'public/payment-links']) {
        answers.push(await limited.request('GET', `/v1/${path}/${l.slug}`));
      }
      expect(answers.slice(0, 3).map((r) => r.status)).toEqual([200, 200, 200]);
      expect(answers[3].status).toBe(429);
      expect(answers[3].body.error.code).toBe('rate_limited');
      expect(answers[0].headers['ratelimit-limit']).toBe('3');
      const payLimited = await limited.request('POST', `/v1/public/payment-links/${l.slug}/pay`, { body: { card } });
      expect(payLimited.status).toBe(429);
      // The merchant's own key has the account's budget, not the address's.
      expect((await limited.request('GET', `/v1/payment-links/${l.id}`, { key: limited.account.testKey })).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });
});
