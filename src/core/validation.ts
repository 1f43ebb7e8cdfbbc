import { z } from 'zod';
import { isCountryCode } from './parties';
import { DomainError } from './errors';
import { storableDeep } from './text';

/**
 * The deepest nesting of objects and arrays accepted anywhere in input. No input of this API
 * comes near it. Deeper input would overflow the stack of the walks over it (this file, the
 * Idempotency-Key fingerprint), which is a 500 instead of the client's error.
 */
export const MAX_INPUT_DEPTH = 32;

/** Throws invalid_parameter when `value` nests objects or arrays deeper than MAX_INPUT_DEPTH. Walks without recursion. */
export function refuseDeepInput(value: unknown, param?: string): void {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    if (depth > MAX_INPUT_DEPTH) {
      throw new DomainError('invalid_parameter', `Input may not nest objects or arrays more than ${MAX_INPUT_DEPTH} levels deep`, param);
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
}

/** Parses service input once; the first problem becomes a DomainError naming its param. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  refuseDeepInput(input);
  refuseProtoKey(input);
  const nul = findNul(input);
  if (nul !== null) throw new DomainError('invalid_parameter', 'Text may not contain NUL characters', nul || undefined);
  // An unpaired surrogate is not Unicode: it becomes U+FFFD here, so what is answered, stored
  // and replayed is the same text.
  const value = hasSurrogate(input) ? storableDeep(input) : (input ?? {});
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  throw toDomainError(result.error, value);
}

function hasSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return /[\uD800-\uDFFF]/.test(value);
  if (Array.isArray(value)) return value.some(hasSurrogate);
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([k, v]) => hasSurrogate(k) || hasSurrogate(v));
  return false;
}

/**
 * The path of the first key, or string value, that `bad` refuses ('' for the input itself), or
 * null. Callers bound the depth first (refuseDeepInput).
 */
function firstPath(value: unknown, badKey: (key: string) => boolean, badText: (text: string) => boolean, path: PropertyKey[] = []): string | null {
  if (typeof value === 'string') return badText(value) ? joinPath(path) : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstPath(value[i], badKey, badText, [...path, i]);
      if (found !== null) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (badKey(k)) return joinPath([...path, k]);
      const found = firstPath(v, badKey, badText, [...path, k]);
      if (found !== null) return found;
    }
  }
  return null;
}

const hasNul = (text: string) => text.includes('\u0000');

/** The path of the first string (or key) holding a NUL character, or null. Databases refuse them. */
export function findNul(value: unknown): string | null {
  return firstPath(value, hasNul, hasNul);
}

/**
 * Refuses an object key named `__proto__` anywhere in the input, naming its path. JSON.parse
 * makes it a harmless own property, but code that copies objects with assignment would turn it
 * into a prototype, so no input carries one past the edge.
 */
export function refuseProtoKey(value: unknown): void {
  const found = firstPath(value, (key) => key === '__proto__', () => false);
  if (found !== null) throw new DomainError('invalid_parameter', 'A key named "__proto__" is not accepted', found);
}

function joinPath(path: PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('');
}

/**
 * Whether `path` names a key its object in `input` does not have. A required field left out fails
 * as a type (`z.number()`), an option (`z.enum`) or a union, depending on its schema; the client's
 * mistake is the same, so the answer is too. Refinements (`custom`) may point at a key on purpose.
 */
function absentIn(input: unknown, issue: z.core.$ZodIssue): boolean {
  if (issue.code === 'custom' || issue.path.length === 0) return false;
  let parent = input;
  for (const segment of issue.path.slice(0, -1)) {
    if (parent === null || typeof parent !== 'object') return false;
    parent = (parent as Record<PropertyKey, unknown>)[segment];
  }
  if (parent === null || typeof parent !== 'object' || Array.isArray(parent)) return false;
  const key = issue.path[issue.path.length - 1];
  return !Object.hasOwn(parent, key) || (parent as Record<PropertyKey, unknown>)[key] === undefined;
}

/** The first problem zod found in `input`, as the DomainError a client gets. */
function toDomainError(error: z.ZodError, input: unknown): DomainError {
  const issue = error.issues[0];
  const base = joinPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0];
    const param = base ? `${base}.${key}` : key;
    return new DomainError('unknown_parameter', `Unknown parameter: '${param}'`, param);
  }
  if ((issue.code === 'invalid_type' && issue.input === undefined) || absentIn(input, issue)) {
    return new DomainError('missing_parameter', `Missing required parameter: '${base}'`, base);
  }
  const param = base || undefined;
  return new DomainError(
    'invalid_parameter',
    param ? `Invalid '${param}': ${issue.message}` : issue.message,
    param,
  );
}

/** metadata: string values, ≤50 keys, key ≤40 chars, value ≤500 chars; null removes a key on update. */
const metadataValue = z.string({ error: 'metadata values must be strings' }).max(500, {
  error: 'metadata values must be at most 500 characters',
});

function checkMetadataKeys(value: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const keys = Object.keys(value);
  if (keys.length > 50) ctx.addIssue({ code: 'custom', message: 'metadata may have at most 50 keys' });
  for (const key of keys) {
    if (key.length === 0 || key.length > 40) {
      ctx.addIssue({ code: 'custom', message: 'metadata keys must be 1 to 40 characters', path: [key] });
    }
  }
}

export const metadataSchema = z
  .record(z.string(), metadataValue, { error: 'metadata must be an object of string values' })
  .superRefine(checkMetadataKeys);

export const metadataPatchSchema = z
  .record(z.string(), metadataValue.nullable(), { error: 'metadata must be an object of string values' })
  .superRefine(checkMetadataKeys);

export type Metadata = Record<string, string>;

export function mergeMetadata(current: Metadata, patch: Record<string, string | null>): Metadata {
  const merged: Metadata = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  if (Object.keys(merged).length > 50) {
    throw new DomainError('invalid_parameter', 'metadata may have at most 50 keys', 'metadata');
  }
  return merged;
}

export const idSchema = (prefix: string) =>
  z.string({ error: `must be a ${prefix}_ id` }).min(1).max(64);

/** A country: any case, returned upper-case; an assigned ISO 3166-1 alpha-2 code (GraphQL's Country enum holds the same list). */
export const countrySchema = z
  .string({ error: 'must be an ISO 3166-1 alpha-2 country code' })
  .regex(/^[A-Za-z]{2}$/, { error: 'must be an ISO 3166-1 alpha-2 country code' })
  .transform((v) => v.toUpperCase())
  .refine(isCountryCode, { error: 'must be an ISO 3166-1 alpha-2 country code, such as DE or GB' });

/**
 * A PUT body without the read-only fields its GET answer carries (`object`, `livemode`,
 * `updatedAt`, …), so what GET returned can be edited and sent back as is. Anything else still
 * goes to the strict schema.
 */
export function withoutReadOnly(input: unknown, fields: readonly string[]): unknown {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return input;
  return Object.fromEntries(Object.entries(input as Record<string, unknown>).filter(([k]) => !fields.includes(k)));
}

/** An e-mail address as every input takes it: trimmed, at most 320 characters. */
export const emailSchema = z
  .string({ error: 'must be an e-mail address' })
  .trim()
  .max(320)
  .pipe(z.email({ error: 'must be an e-mail address' }));
