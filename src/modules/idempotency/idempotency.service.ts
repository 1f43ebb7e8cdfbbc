import { createHmac } from 'node:crypto';
import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { readTime } from '../../db/database';
import type { Clock } from '../../core/clock';
import { DomainError } from '../../core/errors';
import type { SecretBox } from '../../core/crypto';
import { IdempotentReplay, dataEnvelope, type DocumentKey, type IdempotencyHandle } from '../../core/idempotency';
import { Params } from '../../db/params';

export type IdempotencyClaim =
  /** `claimedAt`: the key row's `created_at`, which fences a GraphQL request's writes (see DocumentKey). */
  | { kind: 'claimed'; claimedAt: Date }
  | { kind: 'replay'; status: number; body: string }
  /** The key still runs for an object its first request recorded and `adopt` accepted. */
  | { kind: 'adopted'; objectId: string };

/**
 * Asked about the object recorded on a key that is still running: true when the request may
 * answer for it (the object exists and is settled, so its first request is over or no longer
 * needed), false for the usual 409.
 */
export type AdoptObject = (objectId: string) => Promise<boolean>;

/**
 * A key held this long by a request that wrote no object is taken over by a retry that may
 * adopt (see DocumentKey): its request is dead, or so stalled that it is fenced off.
 */
export const ABANDONED_CLAIM_AFTER_MS = 5 * 60_000;

/**
 * `object_id` of a key claimed by a request that records its object there (GraphQL, see
 * DocumentKey) and has recorded none yet. Only such a key can be taken over: a key claimed by
 * an earlier version (NULL) may have an unrecorded payment behind it.
 */
const NOTHING_RECORDED = '';

/** The condition that a key is still held by the request that claimed it at `claimedAt`. */
function fenced(claimedAt: Date | undefined, p: Params): string {
  return claimedAt ? ` AND created_at = ${p.add(claimedAt)}` : '';
}

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

/** The body with every `cvc` left out, at any depth: a CVC is never kept in any form. */
function withoutCvc(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCvc);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([k]) => k !== 'cvc').map(([k, v]) => [k, withoutCvc(v)]));
  }
  return value;
}

/**
 * What identifies a request under an Idempotency-Key: method, path, the API key sending it and
 * the body. Stored, so it is a keyed HMAC (a plain hash of a body holding a card number could be
 * reversed by guessing the missing digits) of the body without its CVC. Another API key of the
 * account sending the same key gets `idempotency_key_reused`, never the first key's answer: it
 * may lack the permissions that answer needed.
 */
function requestFingerprint(key: Buffer, method: string, path: string, requester: string | undefined, body: unknown): string {
  return createHmac('sha256', key)
    .update(`${method.toUpperCase()} ${path}\n${requester ?? ''}\n${canonicalJson(withoutCvc(body ?? {}))}`)
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
 * The guard lives in the database: the primary key (scope, key) lets exactly one request claim
 * a key, whichever instance it reaches.
 */
export class IdempotencyService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly ttlHours: number,
    private readonly box: SecretBox,
    private readonly fingerprintKey: Buffer,
  ) {}

  /** See requestFingerprint. */
  fingerprint(method: string, path: string, requester: string | undefined, body: unknown): string {
    return requestFingerprint(this.fingerprintKey, method, path, requester, body);
  }

  /**
   * `requester` is the API key asking; a stored response that carries a secret (sealed at
   * rest) is replayed only to the key that created it.
   */
  async claim(
    scope: string, key: string, fingerprint: string, requester?: string, adopt?: AdoptObject, recordsObject = false,
  ): Promise<IdempotencyClaim> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const p = new Params();
      const now = this.clock.now();
      const objectId = recordsObject ? NOTHING_RECORDED : undefined;
      const inserted = await this.db.execute(this.claimSql({ scope, key, fingerprint, objectId }, p, now), p.values);
      if (inserted === 1) return { kind: 'claimed', claimedAt: now };
      const existing = await this.inspect(scope, key, fingerprint, requester, adopt);
      if (existing) return existing;
    }
    throw idempotencyKeyInUse();
  }

  /**
   * Inside the transaction that writes an object's first row: records the object on a GraphQL
   * request's key (see DocumentKey), once, while the key still runs and is still this request's
   * (`claimedAt`). Anything else throws the 409 and the transaction writes nothing: a retry took
   * the key over, or it expired.
   */
  async recordObjectIn(t: Transaction, doc: DocumentKey, objectId: string): Promise<void> {
    const p = new Params();
    const recorded = await this.db.execute(
      `UPDATE idempotency_keys SET object_id = ${p.add(objectId)}
        WHERE scope = ${p.add(doc.scope)} AND idempotency_key = ${p.add(doc.key)} AND state = 'running'
          AND object_id = ${p.add(NOTHING_RECORDED)}${fenced(doc.claimedAt, p)}`,
      p.values,
      t,
    );
    if (recorded !== 1) throw idempotencyKeyInUse();
  }

  /** When a key claimed at `now` expires. */
  private expiryFrom(now: Date): Date {
    return new Date(now.getTime() + this.ttlHours * 3_600_000);
  }

  /** The INSERT that claims a key (no row when another request holds it). */
  claimSql(handle: Pick<IdempotencyHandle, 'scope' | 'key' | 'fingerprint' | 'objectId'>, p: Params, now = this.clock.now()): string {
    const expiresAt = this.expiryFrom(now);
    return `INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, object_id, state, created_at, expires_at)
      VALUES (${p.add(handle.scope)}, ${p.add(handle.key)}, ${p.add(handle.fingerprint)}, ${p.add(handle.objectId ?? null)}, 'running', ${p.add(now)}, ${p.add(expiresAt)})
      ON CONFLICT (scope, idempotency_key) DO NOTHING`;
  }

  /**
   * Claims for many requests in one statement (PostgreSQL): `source` names a relation with
   * columns `idem_scope`, `idem_key`, `idem_hash`, `idem_object` (see IdempotencyHandle.objectId;
   * rows with a null key claim nothing). Returns
   * the `scope` and `idempotency_key` of each key it claimed; a key already held returns nothing.
   */
  claimFromSql(source: string, p: Params): string {
    const now = this.clock.now();
    const expiresAt = this.expiryFrom(now);
    return `INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, object_id, state, created_at, expires_at)
      SELECT s.idem_scope, s.idem_key, s.idem_hash, s.idem_object, 'running', ${p.add(now, 'timestamptz')}, ${p.add(expiresAt, 'timestamptz')}
        FROM ${source} s WHERE s.idem_key IS NOT NULL
       -- One order for every statement: two batches holding the same keys cannot deadlock.
       ORDER BY s.idem_scope, s.idem_key
      ON CONFLICT (scope, idempotency_key) DO NOTHING
      RETURNING scope, idempotency_key`;
  }

  /**
   * Stores responses for many keys claimed with an object (claimFromSql): `source` has
   * `idem_scope`, `idem_key`, `idem_object`, `idem_status`, `idem_body`. Only rows still
   * running for that object are written (see IdempotencyHandle.objectId).
   */
  completeFromSql(source: string): string {
    return `UPDATE idempotency_keys k SET state = 'completed', response_status = s.idem_status, response_body = s.idem_body
      FROM ${source} s WHERE s.idem_key IS NOT NULL AND k.scope = s.idem_scope AND k.idempotency_key = s.idem_key
       AND k.object_id = s.idem_object AND k.state = 'running'`;
  }

  /**
   * After a folded claim found the key taken: throws the stored answer as an IdempotentReplay,
   * or the 409 for a key in use or reused; returns when the row expired or vanished meanwhile
   * (the caller claims again).
   */
  async afterLostClaim(handle: IdempotencyHandle, requester?: string): Promise<void> {
    const existing = await this.inspect(handle.scope, handle.key, handle.fingerprint, requester);
    if (existing?.kind === 'replay') throw new IdempotentReplay(existing.status, existing.body);
  }

  /**
   * A folded claim (see IdempotencyHandle): `write` claims `handle` in its own first statement and
   * returns null when the key was taken, having written nothing. A taken key ends the request with
   * its stored answer (IdempotentReplay) or a 409; one that had expired meanwhile is claimed again.
   */
  async foldedClaim<T>(handle: IdempotencyHandle | undefined, requester: string | undefined, write: () => Promise<T | null>): Promise<T> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const written = await write();
      if (written !== null) {
        if (handle) handle.claimed = true;
        return written;
      }
      await this.afterLostClaim(handle as IdempotencyHandle, requester);
    }
    throw idempotencyKeyInUse();
  }

  /**
   * Inside the settling transaction: stores `objectJson` (in the REST envelope) as the answer of a
   * key claimed for that object, only while the key still runs for it. Returns what it stored, for
   * `handle.completed` once the transaction has committed; nothing when the answer is not ours.
   */
  async completeIn(t: Transaction, handle: IdempotencyHandle, objectJson: string): Promise<{ status: number; body: string } | undefined> {
    const p = new Params();
    const answer = { status: handle.status, body: dataEnvelope(objectJson) };
    return (await this.db.execute(this.completeSql(handle, answer.status, answer.body, p), p.values, t)) === 1 ? answer : undefined;
  }

  /**
   * The stored outcome of a taken key (or, with `adopt`, the object a running key recorded, or
   * the key itself taken over from a request that made nothing), or null when it expired (now
   * deleted) or vanished.
   */
  private async inspect(
    scope: string, key: string, fingerprint: string, requester?: string, adopt?: AdoptObject,
  ): Promise<IdempotencyClaim | null> {
    const now = this.clock.now();
    const [existing] = await this.db.select<{
      request_hash: string; state: string; response_status: number | null; response_body: string | null; expires_at: unknown; object_id: string | null;
      created_at: unknown;
    }>(
      `SELECT request_hash, state, response_status, response_body, expires_at, object_id, created_at
         FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2`,
      [scope, key],
    );
    if (!existing) return null; // released between our insert and select: try again
    if ((readTime(existing.expires_at) as Date).getTime() <= now.getTime()) {
      await this.db.execute('DELETE FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2 AND expires_at <= $3', [scope, key, now]);
      return null;
    }
    if (existing.request_hash !== fingerprint && existing.request_hash !== LEGACY_FINGERPRINT) {
      throw new DomainError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request',
        'Idempotency-Key',
      );
    }
    if (existing.state !== 'completed') {
      if (adopt && existing.object_id && (await adopt(existing.object_id))) return { kind: 'adopted', objectId: existing.object_id };
      const abandoned = new Date(now.getTime() - ABANDONED_CLAIM_AFTER_MS);
      if (adopt && existing.object_id === NOTHING_RECORDED && (readTime(existing.created_at) as Date).getTime() <= abandoned.getTime()) {
        // Its request made nothing and is gone: this one takes the key over, for as long as a
        // new claim lasts. The new created_at fences the old request off (recordObjectIn,
        // complete, release), and only one retry wins.
        const taken = await this.db.execute(
          `UPDATE idempotency_keys SET created_at = $1, expires_at = $2
            WHERE scope = $3 AND idempotency_key = $4 AND state = 'running' AND object_id = $5 AND created_at <= $6`,
          [now, this.expiryFrom(now), scope, key, NOTHING_RECORDED, abandoned],
        );
        if (taken === 1) return { kind: 'claimed', claimedAt: now };
      }
      throw idempotencyKeyInUse();
    }
    const stored = existing.response_body as string;
    if (stored.startsWith(SEALED)) {
      const { body, owner } = this.box.open<{ body: string; owner: string | null }>(stored.slice(SEALED.length));
      if (owner !== (requester ?? null)) {
        throw new DomainError('idempotency_key_reused', 'This Idempotency-Key was used by another API key', 'Idempotency-Key');
      }
      return { kind: 'replay', status: existing.response_status as number, body };
    }
    return { kind: 'replay', status: existing.response_status as number, body: stored };
  }

  /**
   * The UPDATE that stores a (non-secret) response for a claimed key; with an `objectId`, only
   * while the row is still running for that object (see IdempotencyHandle.objectId).
   */
  completeSql(handle: Pick<IdempotencyHandle, 'scope' | 'key' | 'objectId'>, status: number, body: string, p: Params, claimedAt?: Date): string {
    const owned = handle.objectId === undefined ? '' : ` AND object_id = ${p.add(handle.objectId)} AND state = 'running'`;
    return `UPDATE idempotency_keys SET state = 'completed', response_status = ${p.add(status)}, response_body = ${p.add(body)}
      WHERE scope = ${p.add(handle.scope)} AND idempotency_key = ${p.add(handle.key)}${owned}${fenced(claimedAt, p)}`;
  }

  /**
   * `objectId`: the key was claimed for that object; store only while it still runs for it.
   * `claimedAt`: only while the key is still this request's (see DocumentKey).
   */
  async complete(
    scope: string, key: string, status: number, body: string, sensitive?: { owner: string | null }, held: { objectId?: string; claimedAt?: Date } = {},
  ): Promise<void> {
    const stored = sensitive ? `${SEALED}${this.box.seal({ body, owner: sensitive.owner })}` : body;
    const p = new Params();
    await this.db.execute(this.completeSql({ scope, key, objectId: held.objectId }, status, stored, p, held.claimedAt), p.values);
  }

  /**
   * A 5xx outcome is not an outcome: the key is free for a retry. Never a key that names an
   * object (a commit whose reply was lost may have recorded one unbeknown to the request), nor,
   * with `claimedAt`, one a retry has taken over.
   */
  async release(scope: string, key: string, claimedAt?: Date): Promise<void> {
    const p = new Params();
    await this.db.execute(
      `DELETE FROM idempotency_keys WHERE scope = ${p.add(scope)} AND idempotency_key = ${p.add(key)}
        AND (object_id IS NULL OR object_id = ${p.add(NOTHING_RECORDED)})${fenced(claimedAt, p)}`,
      p.values,
    );
  }

  async purgeExpired(): Promise<number> {
    return this.db.execute('DELETE FROM idempotency_keys WHERE expires_at <= $1', [this.clock.now()]);
  }
}
