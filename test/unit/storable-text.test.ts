import { storableDeep, storableText } from '../../src/core/text';
import { withStorableResults } from '../../src/connectors/registry';
import type { Gateway, GatewayResult } from '../../src/connectors/connector';
import { Database } from '../../src/db/database';

describe('storable text', () => {
  it('should replace NUL and unpaired surrogates with U+FFFD and keep everything else', () => {
    expect(storableText('a\u0000b')).toBe('a\uFFFDb');
    expect(storableText('x\uD800y')).toBe('x\uFFFDy'); // lone high
    expect(storableText('x\uDC00y')).toBe('x\uFFFDy'); // lone low
    expect(storableText('end\uD83D')).toBe('end\uFFFD');
    expect(storableText('emoji \uD83D\uDE00 ok')).toBe('emoji \uD83D\uDE00 ok'); // a pair is fine
    expect(storableText('plain, "quoted" \\u0000 text')).toBe('plain, "quoted" \\u0000 text'); // backslash-u text is not a NUL
  });

  it('should clean strings at any depth, keys included, and leave other values alone', () => {
    const d = new Date(0);
    expect(storableDeep({ a: ['x\u0000', 1, null, { 'k\u0000': 'v\uDC00' }], b: true, d })).toEqual({
      a: ['x\uFFFD', 1, null, { 'k\uFFFD': 'v\uFFFD' }], b: true, d,
    });
  });

  it('should bind JSON rows PostgreSQL accepts: unchanged when clean, cleaned rather than refused otherwise', () => {
    const db = Object.create(Database.prototype) as Database;
    const clean = [{ a: 'x', n: 1, e: '\uD83D\uDE00', s: 'back\\u0000slash' }];
    expect(db.jsonParam(clean)).toBe(JSON.stringify(clean));
    expect(JSON.parse(db.jsonParam([{ a: 'x\u0000', b: 'y\uD800' }]))).toEqual([{ a: 'x\uFFFD', b: 'y\uFFFD' }]);
  });

  it("should make every text of a gateway's answers storable", async () => {
    const dirty: GatewayResult = {
      outcome: 'declined', reference: 'ch_\u0000', declineCode: 'card_declined', message: 'No\u0000pe \uD800',
      latencyMs: 3, request: { note: 'a\u0000' }, response: { error: { message: 'b\uDC00' } },
    };
    const raw: Gateway = {
      type: 'fake',
      charge: async () => dirty,
      capture: async () => dirty,
      cancel: async () => dirty,
      refund: async () => dirty,
      status: async () => ({ ...dirty, found: true }),
      saveCard: async () => ({ ...dirty, token: 'tok\u0000' }),
    };
    const g = withStorableResults(raw);
    const expected = {
      ...dirty, reference: 'ch_\uFFFD', message: 'No\uFFFDpe \uFFFD', request: { note: 'a\uFFFD' }, response: { error: { message: 'b\uFFFD' } },
    };
    expect(g.type).toBe('fake');
    expect(await g.charge({} as never)).toEqual(expected);
    expect(await g.refund({} as never)).toEqual(expected);
    expect(await g.status({} as never)).toEqual({ ...expected, found: true });
    expect(await g.saveCard({} as never)).toEqual({ ...expected, token: 'tok\uFFFD' });
  });
});
