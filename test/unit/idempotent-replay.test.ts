import { storedRestBody } from '../../src/core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../src/core/idempotent-operations';

describe('storedRestBody', () => {
  it.each([
    ['a payment-like object', { id: 'pay_1', object: 'payment', amount: 1999, metadata: { a: '1' }, attempts: [{ outcome: 'succeeded', code: null }] }],
    ['an empty object', {}],
    ['text needing escapes and non-ASCII', { id: 'cus_1', description: 'quote " backslash \\ newline \n é 💳 \u2028' }],
  ])('should replay %s exactly as the route sent JSON.stringify({ data, error: null })', (_label, x) => {
    expect(storedRestBody(JSON.stringify(x))).toBe(JSON.stringify({ data: x, error: null }));
  });

  it('should replay an envelope stored whole by an earlier version as it is', () => {
    const legacy = JSON.stringify({ data: { id: 'cus_2', object: 'customer' }, error: null });
    expect(storedRestBody(legacy)).toBe(legacy);
    const legacyError = JSON.stringify({ data: null, error: { code: 'resource_not_found', message: 'x' } });
    expect(storedRestBody(legacyError)).toBe(legacyError);
  });
});

describe('IDEMPOTENT_OPERATIONS', () => {
  it('should seal every operation whose answer holds a secret', () => {
    const sealed = Object.entries(IDEMPOTENT_OPERATIONS).filter(([, op]) => 'sensitive' in op && op.sensitive).map(([name]) => name).sort();
    expect(sealed).toEqual(['createApiKey', 'createWebhookEndpoint', 'rotateWebhookSecret']);
  });
});
