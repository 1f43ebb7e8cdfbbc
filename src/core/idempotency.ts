/**
 * An Idempotency-Key whose claim and completion a service folds into its own writes, so a
 * keyed request costs no statements of its own (`POST /v1/payments` on the REST API).
 *
 * The REST middleware creates the handle unclaimed; the service claims it in the statement that
 * writes its first row and, when it can, stores the response in the statement that writes its
 * last. Whatever the service did not do, the middleware does afterwards as for any other route.
 */
export interface IdempotencyHandle {
  scope: string;
  key: string;
  fingerprint: string;
  /** The HTTP status the operation answers with when it succeeds (what a stored response carries). */
  status: number;
  /** Set once the key is held by this request. */
  claimed: boolean;
  /** Set when the stored response was written with the service's last statement. */
  completed?: { status: number; body: string };
  /**
   * The object whose first write claims the key (a payment's id). The key's row records it, and
   * a response stored under this handle is written only while that row is still this object's
   * and still running: recovery, settling the object after its request died, may store it, but
   * never over an answer already given or a later request's claim of the same key.
   */
  objectId?: string;
}

/**
 * The Idempotency-Key of a GraphQL request, claimed by the middleware before the document runs.
 * A mutation that creates a payment or a refund records its object on the key in the object's
 * first write (`objectId`): the key then stays held when the request fails (money may have
 * moved), and once the object is settled a retry of a document that is only that mutation is
 * answered with it (`adopted`) instead of making another.
 */
export interface DocumentKey {
  scope: string;
  key: string;
  /** Set once this request's object is recorded on the key. */
  objectId?: string;
  /** A retry answering for the object an earlier request with this key recorded. */
  adopted?: string;
  /**
   * When this request claimed the key (the row's `created_at`). A retry that takes over a key
   * whose request made nothing for ABANDONED_CLAIM_AFTER_MS changes it, and every later write of
   * the old request under the key (recording an object, storing or freeing the answer) then
   * does nothing; recording throws, so the old request's object is never written.
   */
  claimedAt?: Date;
}

/** The object a retried GraphQL mutation answers with instead of creating one (id prefix checked). */
export function adoptedObject(ctx: { documentKey?: DocumentKey }, prefix: string): string | undefined {
  const id = ctx.documentKey?.adopted;
  return id?.startsWith(`${prefix}_`) ? id : undefined;
}

/**
 * A document key on which this request may still record its object (the first one it creates).
 * The object's first write must record it (IdempotencyService.recordObjectIn) or write nothing.
 */
export function keyToRecord(ctx: { documentKey?: DocumentKey }): DocumentKey | undefined {
  const doc = ctx.documentKey;
  return doc && !doc.objectId && !doc.adopted ? doc : undefined;
}

/** The scope of an API key's Idempotency-Keys: its account and mode. */
export function idempotencyScope(accountId: string, mode: string): string {
  return `${accountId}:${mode}`;
}

/**
 * For recovery settling an object whose creating request named `key`: if that request died, the
 * key still runs for the object and the settled object becomes its answer (`status`). A key the
 * request answered (a pending 201), or that expired and was claimed again, is left alone
 * (objectId).
 */
export function recoveredKey(ctx: { accountId: string; mode: string }, key: string, status: number, objectId: string): IdempotencyHandle {
  return { scope: idempotencyScope(ctx.accountId, ctx.mode), key, fingerprint: '', status, claimed: true, objectId };
}

/** Thrown by a service that found the key already answered: the middleware sends `body` as is. */
export class IdempotentReplay extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super('idempotent replay');
  }
}

/**
 * The REST success envelope around an already serialised object: byte for byte what the route
 * sends for `{ data, error: null }`, so a response stored by a service replays identically.
 */
export function dataEnvelope(dataJson: string): string {
  return `{"data":${dataJson},"error":null}`;
}

/** `dataEnvelope` in SQL, for a response stored by the statement that writes the object. */
export function dataEnvelopeSql(dataJsonExpr: string): string {
  return `'{"data":' || ${dataJsonExpr} || ',"error":null}'`;
}
