import { createHmac } from 'node:crypto';
import type { Transaction } from 'sequelize';
import type { Clock } from '../../core/clock';
import { DomainError } from '../../core/errors';
import type { SecretBox } from '../../core/crypto';
import { IdempotentReplay, type IdempotencyKey, type ObjectClaim } from '../../core/idempotency';
import type { IdempotentOperation } from '../../core/idempotent-operations';
import type { IdempotencyStore, KeyClaim, StoredKey } from './idempotency.store';

/** What a key holds when a request meets it already claimed (or null: expired, now free). */
type KeyState = { kind: 'replay'; status: number; body: string };

/** Sorted keys at every level, so the same JSON in any key order hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The body without its card's `cvc`: a CVC is never kept in any form. Only where a card object
 * sits: `card` at the top of a REST body (a payment, a saved card), `input.card` in a GraphQL
 * mutation's arguments. A `cvc` anywhere else (a metadata key, say) is data like any other: the
 * same key with another value there is another request.
 */
function withoutCardCvc(body: unknown): unknown {
  if (!isObject(body)) return body;
  const out: Record<string, unknown> = { ...body };
  if (isObject(out.card)) out.card = withoutCvc(out.card);
  if (isObject(out.input) && isObject(out.input.card)) out.input = { ...out.input, card: withoutCvc(out.input.card) };
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function withoutCvc(card: Record<string, unknown>): Record<string, unknown> {
  const { cvc: _cvc, ...rest } = card;
  return rest;
}

/**
 * What identifies a request under an Idempotency-Key: method, path, the API key sending it and
 * the body. Stored, so it is a keyed HMAC (a plain hash of a body holding a card number could be
 * reversed by guessing the missing digits) of the body without its card's CVC. Another API key of the
 * account sending the same key gets `idempotency_key_reused`, never the first key's answer: it
 * may lack the permissions that answer needed.
 */
function requestFingerprint(key: Buffer, method: string, path: string, requester: string | undefined, body: unknown): string {
  return createHmac('sha256', key)
    .update(`${method.toUpperCase()} ${path}\n${requester ?? ''}\n${canonicalJson(withoutCardCvc(body ?? {}))}`)
    .digest('hex');
}

/** Stored in place of the unkeyed hashes of earlier versions (migration 0005): matches any request. */
export const LEGACY_FINGERPRINT = 'legacy';

const SEALED = 'sealed:';

/** The 409 for a key whose first request is still running. */
export function idempotencyKeyInUse(): DomainError {
  return new DomainError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed', 'Idempotency-Key');
}

export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7E]{1,255}$/;

/**
 * The idempotency protocol: who may claim a key, what a taken key answers, and how an answer is
 * kept (sealed when it holds a secret). Keys are kept by IdempotencyStore.
 */
export class IdempotencyService {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly fingerprintKey: Buffer,
  ) {}

  /** See requestFingerprint. */
  fingerprint(method: string, path: string, requester: string | undefined, body: unknown): string {
    return requestFingerprint(this.fingerprintKey, method, path, requester, body);
  }

  /** Claims the key inside `t` (an object's first write); false when another request holds it. */
  claimIn(t: Transaction, claim: KeyClaim): Promise<boolean> {
    return this.store.claim(t, claim);
  }

  /**
   * A claim made by an object's first write (see ObjectClaim): `write` claims `handle` in its own first statement and
   * returns null when the key was taken, having written nothing. A taken key ends the request with
   * its stored answer (IdempotentReplay) or a 409; one that had expired meanwhile is claimed again.
   */
  async foldedClaim<T>(handle: ObjectClaim | undefined, requester: string | undefined, write: () => Promise<T | null>): Promise<T> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const written = await write();
      if (written !== null) return written;
      // Taken: its stored answer, or the 409 for a key in use or reused; expired meanwhile: claim again.
      await this.replayIfAnswered({ ...(handle as ObjectClaim), requester });
    }
    throw idempotencyKeyInUse();
  }

  /**
   * Inside the settling transaction: stores `objectJson` as the answer of a key claimed for that
   * object, only while the key still runs for it (an answer stored first stands).
   */
  async completeIn(t: Transaction, handle: ObjectClaim, objectJson: string): Promise<void> {
    await this.store.answer(t, handle, handle.status, objectJson);
  }

  /**
   * Inside the transaction that changes an object already settled (a late gateway success moving
   * it from `failed` to `requires_review`): the key's stored answer becomes the object as it now
   * is, when that answer is the object as recorded with `recordedStatus` (see
   * IdempotencyStore.reviseAnswer). A retry is then never told `failed` of money that moved.
   */
  async reviseIn(t: Transaction, handle: ObjectClaim, recordedStatus: string, objectJson: string): Promise<boolean> {
    return this.store.reviseAnswer(t, handle, handle.status, recordedStatus, objectJson);
  }

  /**
   * Throws a key's stored answer (IdempotentReplay), or the 409 for a key in use or used by
   * another request; returns when the key is free (never used, or expired). Used before an
   * operation that calls a gateway ahead of its one transaction (saving a card: a key already
   * answered is replayed without asking the gateway again), and after a claim found a key taken.
   * `read`, when given, is the key as the caller already read it (null: not found).
   */
  async replayIfAnswered(idem: IdempotencyKey | undefined, read?: StoredKey | null): Promise<void> {
    if (!idem) return;
    const existing = await this.inspect(idem.scope, idem.key, idem.fingerprint, idem.requester, undefined, read);
    if (existing?.kind === 'replay') throw new IdempotentReplay(existing.status, existing.body);
  }

  /**
   * Runs the checks an operation makes before it claims its key (lookups, routing, a DNS check).
   * One that refuses is answered with the key's stored answer when the key has one: a retry of a
   * request that succeeded must replay it, though the state it checks has moved on since (a
   * gateway disabled, rates replaced). A key never used leaves the refusal as it is.
   */
  async beforeClaim<T>(idem: IdempotencyKey | undefined, checks: () => Promise<T>): Promise<T> {
    try {
      return await checks();
    } catch (err) {
      if (idem && err instanceof DomainError) await this.replayIfAnswered(idem);
      throw err;
    }
  }

  /**
   * After an object's request answers without settling it (still pending): that answer is stored,
   * unless recovery stored the settled object first. Best effort: when the database refuses, the
   * key keeps running and recovery answers it.
   */
  async answerIfRunning(claim: ObjectClaim, objectJson: string): Promise<void> {
    await this.store.answer(undefined, claim, claim.status, objectJson).catch(() => undefined);
  }

  /**
   * Runs an operation that writes in one transaction under its Idempotency-Key: the key is
   * claimed by the transaction's first statement and answered (the operation's object, with
   * `operation.status`) by its last. A crash or an error anywhere rolls the claim back with the
   * writes, so the key is never left locked and a retry simply runs. A key already answered
   * throws its answer (IdempotentReplay) and writes nothing; a concurrent request with the same
   * key waits for the first to commit (PostgreSQL's unique index; SQLite runs one writer at a
   * time) and is then answered with its result.
   */
  async once<T>(t: Transaction, idem: IdempotencyKey | undefined, operation: IdempotentOperation, write: () => Promise<T>): Promise<T> {
    if (!idem) return write();
    for (let attempt = 0; ; attempt++) {
      if (await this.store.claim(t, idem)) break;
      const existing = await this.inspect(idem.scope, idem.key, idem.fingerprint, idem.requester, t);
      if (existing?.kind === 'replay') throw new IdempotentReplay(existing.status, existing.body);
      if (attempt > 0) throw idempotencyKeyInUse();
    }
    const result = await write();
    const json = JSON.stringify(result);
    const stored = operation.sensitive ? `${SEALED}${this.box.seal({ body: json, owner: idem.requester ?? null })}` : json;
    await this.store.answer(t, { scope: idem.scope, key: idem.key }, operation.status, stored);
    return result;
  }

  /**
   * The stored answer of a taken key, or null when it expired (now deleted) or vanished; throws
   * the 409 for a key still running (a payment or refund being processed) or used differently.
   */
  private async inspect(scope: string, key: string, fingerprint: string, requester?: string, t?: Transaction, read?: StoredKey | null): Promise<KeyState | null> {
    const now = this.clock.now();
    const existing = read === undefined ? await this.store.read(scope, key, t) : read;
    if (!existing) return null; // released between our insert and select: try again
    if (existing.expiresAt.getTime() <= now.getTime()) {
      await this.store.deleteIfExpired(scope, key, now, t);
      return null;
    }
    if (existing.requestHash !== fingerprint && existing.requestHash !== LEGACY_FINGERPRINT) {
      throw new DomainError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request',
        'Idempotency-Key',
      );
    }
    // Running: a payment or refund still being processed (or recovered). Rows an earlier version
    // left running without an object are left to expire.
    if (existing.state !== 'completed') throw idempotencyKeyInUse();
    const stored = existing.responseBody as string;
    const status = existing.responseStatus as number;
    if (stored.startsWith(SEALED)) {
      const { body, owner } = this.box.open<{ body: string; owner: string | null }>(stored.slice(SEALED.length));
      if (owner !== (requester ?? null)) {
        throw new DomainError('idempotency_key_reused', 'This Idempotency-Key was used by another API key', 'Idempotency-Key');
      }
      return { kind: 'replay', status, body };
    }
    return { kind: 'replay', status, body: stored };
  }

  /**
   * Replaces the stored answer of a key an operation answered before its work was over (a
   * subscription answered, then its first invoice charged): a retry then replays the object as it
   * ended, not as it was when the key was claimed. Not for sealed answers.
   */
  async restate(idem: IdempotencyKey | undefined, operation: IdempotentOperation, answer: unknown): Promise<void> {
    if (!idem || operation.sensitive) return;
    await this.store.answer(undefined, { scope: idem.scope, key: idem.key }, operation.status, JSON.stringify(answer));
  }

  purgeExpired(): Promise<number> {
    return this.store.purgeExpired();
  }
}
