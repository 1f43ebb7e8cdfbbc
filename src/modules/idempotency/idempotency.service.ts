import { createHmac } from 'node:crypto';
import { Op, type Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { readTime } from '../../db/database';
import type { Clock } from '../../core/clock';
import { DomainError } from '../../core/errors';
import type { SecretBox } from '../../core/crypto';
import { IdempotentReplay, type IdempotencyKey, type ObjectClaim } from '../../core/idempotency';
import type { IdempotentOperation } from '../../core/idempotent-operations';
import { Params } from '../../db/params';
import { IdempotencyKeyModel } from './idempotency-key.model';

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

  /** When a key claimed at `now` expires. */
  private expiryFrom(now: Date): Date {
    return new Date(now.getTime() + this.ttlHours * 3_600_000);
  }

  /** The INSERT that claims a key (no row when another request holds it). */
  claimSql(handle: Pick<ObjectClaim, 'scope' | 'key' | 'fingerprint'> & { objectId?: string | null }, p: Params, now = this.clock.now()): string {
    const expiresAt = this.expiryFrom(now);
    return `INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, object_id, state, created_at, expires_at)
      VALUES (${p.add(handle.scope)}, ${p.add(handle.key)}, ${p.add(handle.fingerprint)}, ${p.add(handle.objectId ?? null)}, 'running', ${p.add(now)}, ${p.add(expiresAt)})
      ON CONFLICT (scope, idempotency_key) DO NOTHING`;
  }

  /**
   * Claims for many requests in one statement (PostgreSQL): `source` names a relation with
   * columns `idem_scope`, `idem_key`, `idem_hash`, `idem_object` (see ObjectClaim;
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
   * running for that object are written (see ObjectClaim).
   */
  completeFromSql(source: string): string {
    return `UPDATE idempotency_keys k SET state = 'completed', response_status = s.idem_status, response_body = s.idem_body
      FROM ${source} s WHERE s.idem_key IS NOT NULL AND k.scope = s.idem_scope AND k.idempotency_key = s.idem_key
       AND k.object_id = s.idem_object AND k.state = 'running'`;
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
    const p = new Params();
    await this.db.execute(this.completeSql(handle, handle.status, objectJson, p), p.values, t);
  }

  /**
   * Throws a key's stored answer (IdempotentReplay), or the 409 for a key in use or used by
   * another request; returns when the key is free (never used, or expired). Used before an
   * operation that calls a gateway ahead of its one transaction (saving a card: a key already
   * answered is replayed without asking the gateway again), and after a claim found a key taken.
   */
  async replayIfAnswered(idem: IdempotencyKey | undefined): Promise<void> {
    if (!idem) return;
    const existing = await this.inspect(idem.scope, idem.key, idem.fingerprint, idem.requester);
    if (existing?.kind === 'replay') throw new IdempotentReplay(existing.status, existing.body);
  }

  /**
   * After an object's request answers without settling it (still pending): that answer is stored,
   * unless recovery stored the settled object first. Best effort: when the database refuses, the
   * key keeps running and recovery answers it.
   */
  async answerIfRunning(claim: ObjectClaim, objectJson: string): Promise<void> {
    const p = new Params();
    await this.db.execute(this.completeSql(claim, claim.status, objectJson, p), p.values).catch(() => undefined);
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
      const p = new Params();
      if ((await this.db.execute(this.claimSql(idem, p), p.values, t)) === 1) break;
      const existing = await this.inspect(idem.scope, idem.key, idem.fingerprint, idem.requester, t);
      if (existing?.kind === 'replay') throw new IdempotentReplay(existing.status, existing.body);
      if (attempt > 0) throw idempotencyKeyInUse();
    }
    const result = await write();
    const json = JSON.stringify(result);
    const stored = operation.sensitive ? `${SEALED}${this.box.seal({ body: json, owner: idem.requester ?? null })}` : json;
    const p = new Params();
    await this.db.execute(this.completeSql({ scope: idem.scope, key: idem.key }, operation.status, stored, p), p.values, t);
    return result;
  }

  /**
   * The stored answer of a taken key, or null when it expired (now deleted) or vanished; throws
   * the 409 for a key still running (a payment or refund being processed) or used differently.
   */
  private async inspect(scope: string, key: string, fingerprint: string, requester?: string, t?: Transaction): Promise<KeyState | null> {
    const now = this.clock.now();
    const [existing] = await this.db.select<{ request_hash: string; state: string; response_status: number | null; response_body: string | null; expires_at: unknown }>(
      `SELECT request_hash, state, response_status, response_body, expires_at
         FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2`,
      [scope, key],
      t,
    );
    if (!existing) return null; // released between our insert and select: try again
    if ((readTime(existing.expires_at) as Date).getTime() <= now.getTime()) {
      await this.db.execute('DELETE FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2 AND expires_at <= $3', [scope, key, now], t);
      return null;
    }
    if (existing.request_hash !== fingerprint && existing.request_hash !== LEGACY_FINGERPRINT) {
      throw new DomainError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request',
        'Idempotency-Key',
      );
    }
    // Running: a payment or refund still being processed (or recovered). Rows an earlier version
    // left running without an object are left to expire.
    if (existing.state !== 'completed') throw idempotencyKeyInUse();
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
   * The UPDATE that stores an answer for a claimed key; with an `objectId`, only while the row
   * is still running for that object (see ObjectClaim).
   */
  completeSql(handle: Pick<ObjectClaim, 'scope' | 'key'> & { objectId?: string }, status: number, body: string, p: Params): string {
    const owned = handle.objectId === undefined ? '' : ` AND object_id = ${p.add(handle.objectId)} AND state = 'running'`;
    return `UPDATE idempotency_keys SET state = 'completed', response_status = ${p.add(status)}, response_body = ${p.add(body)}
      WHERE scope = ${p.add(handle.scope)} AND idempotency_key = ${p.add(handle.key)}${owned}`;
  }

  async purgeExpired(): Promise<number> {
    return IdempotencyKeyModel.destroy({ where: { expiresAt: { [Op.lte]: this.clock.now() } } });
  }
}
