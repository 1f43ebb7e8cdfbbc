/**
 * A request's Idempotency-Key, handed as an argument to the service operation that honours it
 * (see IDEMPOTENT_OPERATIONS). The operation claims it in its own transaction and stores its
 * answer there too, so the key and the operation's writes commit together or not at all.
 */
export interface IdempotencyKey {
  readonly scope: string;
  readonly key: string;
  /** What identifies the request (see IdempotencyService.fingerprint). */
  readonly fingerprint: string;
  /** The API key sending it: an answer holding a secret is replayed only to that key. */
  readonly requester?: string;
}

/**
 * A key claimed with the first write of an object whose operation calls a gateway (a payment, a
 * refund). The key and the object name each other: the key stays running while the object is
 * pending, and its answer (`status` and the settled object) is stored by the settling write,
 * whether the request's own or recovery's, and only while the key still runs for that object.
 */
export interface ObjectClaim {
  readonly scope: string;
  readonly key: string;
  readonly fingerprint: string;
  readonly status: number;
  readonly objectId: string;
}

export function claimFor(idem: IdempotencyKey, objectId: string, status: number): ObjectClaim {
  return { scope: idem.scope, key: idem.key, fingerprint: idem.fingerprint, status, objectId };
}

/** The scope of an API key's Idempotency-Keys: its account and mode. */
export function idempotencyScope(accountId: string, mode: string): string {
  return `${accountId}:${mode}`;
}

/** `idempotencyScope` as SQL over an account and a mode column (a statement that reads an object and its key at once). */
export function idempotencyScopeSql(accountColumn: string, modeColumn: string): string {
  return `(${accountColumn} || ':' || ${modeColumn})`;
}

/**
 * For recovery settling an object whose creating request named `key`: if that request died, the
 * key still runs for the object and the settled object becomes its answer (`status`). A key the
 * request answered (a pending 201), or that expired and was claimed again, is left alone
 * (objectId).
 */
export function recoveredKey(ctx: { accountId: string; mode: string }, key: string, status: number, objectId: string): ObjectClaim {
  return { scope: idempotencyScope(ctx.accountId, ctx.mode), key, fingerprint: '', status, objectId };
}

/**
 * Thrown by an operation whose key already has an answer; nothing was written. `stored` is what
 * the key keeps: the operation's object as JSON, which each transport wraps in its own envelope
 * (see storedRestBody), or, for keys answered by earlier versions and GraphQL documents, the
 * whole response body.
 */
export class IdempotentReplay extends Error {
  constructor(
    readonly status: number,
    readonly stored: string,
  ) {
    super('idempotent replay');
  }
}

/**
 * The REST body replaying a stored answer: byte for byte what the route sent for
 * `{ data, error: null }` when the answer is an object, as is when a whole envelope was stored
 * (no API object begins with a `data` field).
 */
export function storedRestBody(stored: string): string {
  return stored.startsWith('{"data":') ? stored : `{"data":${stored},"error":null}`;
}
