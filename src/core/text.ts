/**
 * Text the databases cannot store as given: NUL characters (PostgreSQL refuses them) and
 * unpaired UTF-16 surrogates (not valid Unicode; PostgreSQL's JSON refuses their escapes).
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `text` with each unstorable character replaced by U+FFFD, as a UTF-8 encoder does. */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, '\uFFFD');
}

/** `value` with storableText applied to every string in it (keys included); shares what needs no change. */
export function storableDeep<T>(value: T): T {
  if (typeof value === 'string') return storableText(value) as T;
  if (Array.isArray(value)) return value.map((v) => storableDeep(v)) as T;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableText(k), storableDeep(v)])) as T;
  }
  return value;
}
