import { createHmac, randomBytes } from 'node:crypto';
import { deriveKey } from '../../../src/core/crypto';
import { DomainError } from '../../../src/core/errors';
import { parseInput } from '../../../src/core/validation';
import {
  REDACTED_CARD,
  cardBrand,
  cardFingerprint,
  cardInputSchema,
  describeCard,
  isExpired,
  isValidCardNumber,
  luhnValid,
  normalizeCardNumber,
  redactPan,
  type CardBrand,
} from '../../../src/core/card';

const validCard = { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' };

function parseError(input: unknown): DomainError {
  try {
    parseInput(cardInputSchema, input);
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected a DomainError');
}

describe('luhnValid', () => {
  it.each(['4242424242424242', '5555555555554444', '378282246310005', '79927398713', '0'])(
    'should accept the Luhn-valid number %s',
    (n) => expect(luhnValid(n)).toBe(true),
  );

  it.each(['4242424242424241', '5555555555554443', '378282246310006', '79927398710'])(
    'should reject the Luhn-invalid number %s',
    (n) => expect(luhnValid(n)).toBe(false),
  );

  it('should reject empty strings and non-digits', () => {
    expect(luhnValid('')).toBe(false);
    expect(luhnValid('4242 4242 4242 4242')).toBe(false);
    expect(luhnValid('42424242424242a2')).toBe(false);
  });

  it('should accept every simulator test card from the API contract', () => {
    for (const n of [
      '4242424242424242', '5555555555554444', '4000000000000002', '4000000000009995',
      '4000000000000069', '4000000000000119', '4000000000000341',
    ]) {
      expect(isValidCardNumber(n)).toBe(true);
    }
  });
});

describe('cardBrand', () => {
  it.each<[string, CardBrand]>([
    // Visa (incl. the API.md simulator cards and a 13-digit Visa)
    ['4242424242424242', 'visa'],
    ['4000056655665556', 'visa'],
    ['4111111111111111', 'visa'],
    ['4222222222222', 'visa'],
    ['4000000000000002', 'visa'],
    ['4000000000009995', 'visa'],
    ['4000000000000069', 'visa'],
    ['4000000000000119', 'visa'],
    ['4000000000000341', 'visa'],
    // Mastercard 51–55 and the 2-series 2221–2720
    ['5555555555554444', 'mastercard'],
    ['5200828282828210', 'mastercard'],
    ['5105105105105100', 'mastercard'],
    ['2223003122003222', 'mastercard'],
    ['2221000000000009', 'mastercard'],
    ['2720992720992729', 'mastercard'],
    // American Express
    ['378282246310005', 'amex'],
    ['371449635398431', 'amex'],
    // Discover 6011, 644–649, 65
    ['6011111111111117', 'discover'],
    ['6011000990139424', 'discover'],
    ['6445644564456445', 'discover'],
    ['6500000000000002', 'discover'],
    // Diners Club 300–305, 3095, 36, 38–39
    ['3056930009020004', 'diners'],
    ['36227206271667', 'diners'],
    ['38520000023237', 'diners'],
    ['30950000000000', 'diners'],
    // JCB 3528–3589
    ['3566002020360505', 'jcb'],
    ['3530111333300000', 'jcb'],
    ['3528000000000000', 'jcb'],
    ['3589000000000000', 'jcb'],
    // UnionPay 62, 81
    ['6200000000000005', 'unionpay'],
    ['6205500000000000004', 'unionpay'],
    ['8171999927660000', 'unionpay'],
  ])('should detect %s as %s', (number, brand) => {
    expect(cardBrand(number)).toBe(brand);
  });

  it.each([
    ['2220999999999999', 'just below the Mastercard 2-series'],
    ['2721000000000000', 'just above the Mastercard 2-series'],
    ['5000000000000000', 'Mastercard gap 50'],
    ['5600000000000000', 'Mastercard gap 56'],
    ['3527000000000000', 'just below JCB'],
    ['3590000000000000', 'just above JCB'],
    ['3060000000000000', 'just above Diners 300–305'],
    ['6759649826438453', 'Maestro'],
    ['9999999999999999', 'no network'],
  ])('should return unknown for %s (%s)', (number) => {
    expect(cardBrand(number)).toBe('unknown');
  });

  it('should tolerate spaces and dashes', () => {
    expect(cardBrand('4242 4242 4242 4242')).toBe('visa');
    expect(cardBrand('3782-822463-10005')).toBe('amex');
  });

  it('should return unknown for junk', () => {
    expect(cardBrand('')).toBe('unknown');
    expect(cardBrand('abcd')).toBe('unknown');
    expect(cardBrand('4x42424242424242')).toBe('unknown');
  });
});

describe('cardInputSchema', () => {
  it('should accept a valid card and keep the fields', () => {
    expect(cardInputSchema.parse(validCard)).toEqual(validCard);
  });

  it('should strip spaces and dashes from the number', () => {
    expect(cardInputSchema.parse({ ...validCard, number: '4242 4242-4242 4242' }).number).toBe('4242424242424242');
    expect(normalizeCardNumber(' 4242-4242 ')).toBe('42424242');
  });

  it('should accept a 19-digit number and a 12-digit number when Luhn-valid', () => {
    expect(cardInputSchema.parse({ ...validCard, number: '6205500000000000004' }).number).toBe('6205500000000000004');
    expect(cardInputSchema.parse({ ...validCard, number: '123456789015' }).number).toBe('123456789015');
  });

  it('should report a Luhn failure as "card number is invalid" on number', () => {
    const result = cardInputSchema.safeParse({ ...validCard, number: '4242424242424241' });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]).toMatchObject({ path: ['number'], message: 'card number is invalid' });
  });

  it.each([
    ['too short', '42424242424'],
    ['too long', '42424242424242424242'],
    ['letters', '4242abcd42424242'],
    ['dots', '4242.4242.4242.4242'],
    ['empty', ''],
  ])('should reject a number that is %s', (_label, number) => {
    const result = cardInputSchema.safeParse({ ...validCard, number });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]).toMatchObject({ path: ['number'], message: 'card number is invalid' });
  });

  it('should reject a number given as a JSON number', () => {
    const err = parseError({ ...validCard, number: 4242424242424242 });
    expect(err.param).toBe('number');
  });

  it('should map to an invalid_parameter DomainError on number', () => {
    const err = parseError({ ...validCard, number: '4000000000000001' });
    expect(err.code).toBe('invalid_parameter');
    expect(err.param).toBe('number');
    expect(err.message).toBe("Invalid 'number': card number is invalid");
  });

  it('should add 2000 to two-digit years', () => {
    expect(cardInputSchema.parse({ ...validCard, expYear: 34 }).expYear).toBe(2034);
    expect(cardInputSchema.parse({ ...validCard, expYear: 5 }).expYear).toBe(2005);
    expect(cardInputSchema.parse({ ...validCard, expYear: 0 }).expYear).toBe(2000);
  });

  it.each([123, 10000, -1, 20.5, '2030'])('should reject the year %p', (expYear) => {
    const err = parseError({ ...validCard, expYear });
    expect(err.param).toBe('expYear');
  });

  it.each([0, 13, 1.5, -1, '12'])('should reject the month %p', (expMonth) => {
    const err = parseError({ ...validCard, expMonth });
    expect(err.param).toBe('expMonth');
  });

  it('should accept months 1 through 12', () => {
    for (let m = 1; m <= 12; m++) expect(cardInputSchema.parse({ ...validCard, expMonth: m }).expMonth).toBe(m);
  });

  it('should accept 3- and 4-digit CVCs', () => {
    expect(cardInputSchema.parse({ ...validCard, cvc: '123' }).cvc).toBe('123');
    expect(cardInputSchema.parse({ ...validCard, number: '378282246310005', cvc: '1234' }).cvc).toBe('1234');
  });

  it.each(['12', '12345', 'abc', '', 123])('should reject the cvc %p', (cvc) => {
    expect(parseError({ ...validCard, cvc }).param).toBe('cvc');
  });

  it('should be strict about unknown fields', () => {
    const err = parseError({ ...validCard, name: 'Jane' });
    expect(err.code).toBe('unknown_parameter');
    expect(err.param).toBe('name');
  });

  it('should report missing fields', () => {
    const { cvc: _omit, ...noCvc } = validCard;
    const err = parseError(noCvc);
    expect(err.code).toBe('missing_parameter');
    expect(err.param).toBe('cvc');
  });
});

describe('isExpired', () => {
  it('should treat a card as valid through the last moment of its expiry month', () => {
    expect(isExpired(12, 2030, new Date('2030-12-31T23:59:59.999Z'))).toBe(false);
    expect(isExpired(12, 2030, new Date('2031-01-01T00:00:00.000Z'))).toBe(true);
  });

  it('should handle February in a leap year', () => {
    expect(isExpired(2, 2028, new Date('2028-02-29T12:00:00Z'))).toBe(false);
    expect(isExpired(2, 2028, new Date('2028-03-01T00:00:00Z'))).toBe(true);
  });

  it('should compare across years and months', () => {
    const now = new Date('2026-06-15T00:00:00Z');
    expect(isExpired(5, 2026, now)).toBe(true);
    expect(isExpired(6, 2026, now)).toBe(false);
    expect(isExpired(1, 2027, now)).toBe(false);
    expect(isExpired(12, 2025, now)).toBe(true);
  });

  it('should understand two-digit years', () => {
    const now = new Date('2026-06-15T00:00:00Z');
    expect(isExpired(12, 30, now)).toBe(false);
    expect(isExpired(12, 25, now)).toBe(true);
  });
});

describe('describeCard', () => {
  const key = deriveKey(randomBytes(32), 'card-fingerprint');

  it('should return only type, brand, last4, expiry and fingerprint', () => {
    const details = describeCard(validCard, key);
    expect(details).toEqual({
      type: 'card',
      brand: 'visa',
      last4: '4242',
      expMonth: 12,
      expYear: 2034,
      fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(Object.keys(details).sort()).toEqual(['brand', 'expMonth', 'expYear', 'fingerprint', 'last4', 'type']);
  });

  it('should never contain the full number or the cvc', () => {
    const card = { number: '5555 5555 5555 4444', expMonth: 3, expYear: 31, cvc: '987' };
    const described = describeCard(card, key);
    const json = JSON.stringify(described);
    expect(json).not.toContain('5555555555554444');
    expect(json).not.toContain('5555 5555 5555 4444');
    // The fingerprint is random-looking hex that may hold "987" by chance: look everywhere else.
    expect(JSON.stringify({ ...described, fingerprint: null })).not.toContain('987');
    expect(described.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(json).not.toMatch(/cvc|number/i);
    expect(describeCard(card, key)).toMatchObject({ brand: 'mastercard', last4: '4444', expYear: 2031 });
  });

  it('should compute the fingerprint as HMAC-SHA256 hex truncated to 32 characters', () => {
    const expected = createHmac('sha256', key).update('4242424242424242').digest('hex').slice(0, 32);
    expect(describeCard(validCard, key).fingerprint).toBe(expected);
    expect(cardFingerprint('4242424242424242', key)).toBe(expected);
  });

  it('should give the same card the same fingerprint regardless of formatting, expiry or cvc', () => {
    const a = describeCard(validCard, key).fingerprint;
    const b = describeCard({ number: '4242-4242-4242-4242', expMonth: 1, expYear: 2040, cvc: '999' }, key).fingerprint;
    expect(b).toBe(a);
  });

  it('should give different cards different fingerprints', () => {
    expect(describeCard(validCard, key).fingerprint).not.toBe(
      describeCard({ ...validCard, number: '4000056655665556' }, key).fingerprint,
    );
  });

  it('should give a different fingerprint under a different key', () => {
    const other = deriveKey(randomBytes(32), 'card-fingerprint');
    expect(describeCard(validCard, key).fingerprint).not.toBe(describeCard(validCard, other).fingerprint);
  });

  it('should not expose the fingerprint key', () => {
    expect(JSON.stringify(describeCard(validCard, key))).not.toContain(key.toString('hex').slice(0, 16));
  });

  it('should work on the output of cardInputSchema', () => {
    const parsed = cardInputSchema.parse({ number: '3782 822463 10005', expMonth: 7, expYear: 29, cvc: '1234' });
    expect(describeCard(parsed, key)).toMatchObject({ brand: 'amex', last4: '0005', expMonth: 7, expYear: 2029 });
  });

  it('should refuse an empty fingerprint key', () => {
    expect(() => describeCard(validCard, Buffer.alloc(0))).toThrow(/key/);
  });
});

describe('redactPan', () => {
  it('should redact a bare card number in text', () => {
    expect(redactPan('charging 4242424242424242 now')).toBe(`charging ${REDACTED_CARD} now`);
  });

  it('should redact numbers separated by spaces or dashes', () => {
    expect(redactPan('card 4242 4242 4242 4242.')).toBe(`card ${REDACTED_CARD}.`);
    expect(redactPan('card 5555-5555-5555-4444!')).toBe(`card ${REDACTED_CARD}!`);
    expect(redactPan('amex 3782 822463 10005')).toBe(`amex ${REDACTED_CARD}`);
  });

  it('should redact several card numbers in mixed text', () => {
    const text =
      'user 42 paid with 4242424242424242 (visa) then 5555 5555 5555 4444, amount 1999, ' +
      'order #12345, phone +1 555 123 4567';
    expect(redactPan(text)).toBe(
      `user 42 paid with ${REDACTED_CARD} (visa) then ${REDACTED_CARD}, amount 1999, order #12345, phone +1 555 123 4567`,
    );
  });

  it('should redact card numbers inside JSON log lines', () => {
    const line = JSON.stringify({ msg: 'request', body: { card: { number: '4000000000000002', cvc: '123' } } });
    const out = redactPan(line);
    expect(out).not.toContain('4000000000000002');
    expect(out).toContain(`"number":"${REDACTED_CARD}"`);
  });

  it('should redact 13- and 19-digit card numbers', () => {
    expect(redactPan('x 4222222222222 y')).toBe(`x ${REDACTED_CARD} y`);
    expect(redactPan('x 6205500000000000004 y')).toBe(`x ${REDACTED_CARD} y`);
  });

  it('should still catch a card number that follows another number', () => {
    const out = redactPan('order 12 4242 4242 4242 4242');
    expect(out).toBe(`order 12 ${REDACTED_CARD}`);
    expect(redactPan('ids 7 3 4242424242424242 5')).toBe(`ids 7 3 ${REDACTED_CARD} 5`);
  });

  it('should never let a card number through, whatever numbers surround it', () => {
    for (let before = 0; before < 100; before++) {
      for (const after of [0, 1, 9, 42]) {
        const out = redactPan(`ref ${before} 4242 4242 4242 4242 ${after}`);
        expect(out).toContain(REDACTED_CARD);
        expect(out.replace(/\D/g, '')).not.toContain('4242424242424242');
      }
    }
  });

  it('should leave Luhn-invalid and short digit runs alone', () => {
    const text = 'id 4242424242424241, ts 1700000000001, amount 100000, short 424242424242';
    expect(luhnValid('1700000000001')).toBe(false);
    expect(redactPan(text)).toBe(text);
  });

  it('should leave runs longer than 19 digits alone', () => {
    const text = 'trace 42424242424242424242424242';
    expect(redactPan(text)).toBe(text);
  });

  it('should leave text without card numbers unchanged', () => {
    expect(redactPan('')).toBe('');
    expect(redactPan('hello world')).toBe('hello world');
    expect(redactPan('pay_abc123 succeeded in 120 ms')).toBe('pay_abc123 succeeded in 120 ms');
  });

  it('should not treat separators other than single spaces/dashes as part of a number', () => {
    const text = '4242/4242/4242/4242';
    expect(redactPan(text)).toBe(text);
  });
});
