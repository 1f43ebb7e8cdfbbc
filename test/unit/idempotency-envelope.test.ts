import { dataEnvelope } from '../../src/core/idempotency';

describe('dataEnvelope', () => {
  it.each([
    ['a payment-like object', { id: 'pay_1', object: 'payment', amount: 1999, metadata: { a: '1' }, attempts: [{ outcome: 'succeeded', code: null }] }],
    ['an empty object', {}],
    ['an array', [1, 'two', { three: 3 }]],
    ['text needing escapes and non-ASCII', { description: 'quote " backslash \\ newline \n é 💳 \u2028' }],
    ['null', null],
    ['a number', 42],
  ])('should wrap %s exactly as JSON.stringify({ data, error: null })', (_label, x) => {
    expect(dataEnvelope(JSON.stringify(x))).toBe(JSON.stringify({ data: x, error: null }));
  });

  it('should parse back to the object with error null', () => {
    const x = { id: 'pay_2', nested: { list: [true, false, null] } };
    expect(JSON.parse(dataEnvelope(JSON.stringify(x)))).toEqual({ data: x, error: null });
  });
});
