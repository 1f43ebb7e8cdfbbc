import { Op, type Transaction } from 'sequelize';
import { readTime, type Database } from '../../db/database';
import type { CtePart } from '../../db/statement';
import type { Clock } from '../../core/clock';
import { Params } from '../../db/params';
import { IdempotencyKeyModel } from './idempotency-key.model';

/** A key to claim: who may use it (scope), the key, the request it stands for, the object it will name. */
export interface KeyClaim {
  scope: string;
  key: string;
  fingerprint: string;
  objectId?: string | null;
}

/** Where an answer goes: the key, and (for an object's key) the object it must still run for. */
export interface KeyAnswer {
  scope: string;
  key: string;
  objectId?: string;
}

/** A key as stored. */
export interface StoredKey {
  requestHash: string;
  state: 'running' | 'completed';
  responseStatus: number | null;
  responseBody: string | null;
  expiresAt: Date;
}

/**
 * Where Idempotency-Keys are kept. Claiming a key and answering it are on every idempotent
 * request's path: named, bound statements, the same on both dialects. The primary key
 * (scope, idempotency_key) lets exactly one request claim a key, whichever instance it reaches.
 * For the payments' PostgreSQL group commit the store also hands out its claim and answer as
 * CTE parts over a relation of many requests (`claimPart`, `answerPart`).
 */
export class IdempotencyStore {
  /** Keys are claimed, and expire, on `clock` (the services' clock), whoever claims them. */
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly ttlHours: number,
  ) {}

  /** When a key claimed at `now` expires. */
  private expiryFrom(now: Date): Date {
    return new Date(now.getTime() + this.ttlHours * 3_600_000);
  }

  /** Claims the key (in `t` when given); false when another request holds it. */
  async claim(t: Transaction | undefined, claim: KeyClaim): Promise<boolean> {
    const now = this.clock.now();
    const p = new Params();
    const sql = `INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, object_id, state, created_at, expires_at)
      VALUES (${p.add(claim.scope)}, ${p.add(claim.key)}, ${p.add(claim.fingerprint)}, ${p.add(claim.objectId ?? null)}, 'running', ${p.add(now)}, ${p.add(this.expiryFrom(now))})
      ON CONFLICT (scope, idempotency_key) DO NOTHING`;
    return (await this.db.execute(sql, p.values, t)) === 1;
  }

  /**
   * Stores the answer of a claimed key; with an `objectId`, only while the key still runs for
   * that object (an answer stored first stands). Returns whether it was stored.
   */
  async answer(t: Transaction | undefined, target: KeyAnswer, status: number, body: string): Promise<boolean> {
    const p = new Params();
    const owned = target.objectId === undefined ? '' : ` AND object_id = ${p.add(target.objectId)} AND state = 'running'`;
    const sql = `UPDATE idempotency_keys SET state = 'completed', response_status = ${p.add(status)}, response_body = ${p.add(body)}
      WHERE scope = ${p.add(target.scope)} AND idempotency_key = ${p.add(target.key)}${owned}`;
    return (await this.db.execute(sql, p.values, t)) === 1;
  }

  /**
   * Replaces the answer of an object's key with `body` when, and only while, the key still names
   * that object and holds the answer it was given for it as recorded with `recordedStatus` (the
   * object's JSON, `status` that one): a later change of the object's own record (a late gateway
   * success turning `failed` into `requires_review`) reaches the key, never another answer (a
   * pending answer the request gave, an answer sealed, a key claimed again after it expired).
   * Runs in the caller's transaction, which holds the object's row; the update is a
   * compare-and-set on the answer read. Returns whether the answer was replaced.
   */
  async reviseAnswer(t: Transaction, target: Required<KeyAnswer>, status: number, recordedStatus: string, body: string): Promise<boolean> {
    const [row] = await this.db.select<{ response_body: string | null }>(
      `SELECT response_body FROM idempotency_keys
        WHERE scope = $1 AND idempotency_key = $2 AND object_id = $3 AND state = 'completed' AND response_status = $4${this.db.forUpdate}`,
      [target.scope, target.key, target.objectId, status],
      t,
    );
    const stored = row?.response_body ?? null;
    if (stored === null || !answersObjectAs(stored, target.objectId, recordedStatus)) return false;
    const p = new Params();
    const sql = `UPDATE idempotency_keys SET response_body = ${p.add(body)}
      WHERE scope = ${p.add(target.scope)} AND idempotency_key = ${p.add(target.key)} AND object_id = ${p.add(target.objectId)}
       AND state = 'completed' AND response_status = ${p.add(status)} AND response_body = ${p.add(stored)}`;
    return (await this.db.execute(sql, p.values, t)) === 1;
  }

  async read(scope: string, key: string, t?: Transaction): Promise<StoredKey | null> {
    const [row] = await this.db.select(
      `SELECT ${STORED_KEY_COLUMNS('k')} FROM idempotency_keys k WHERE k.scope = $1 AND k.idempotency_key = $2`,
      [scope, key],
      t,
    );
    return row ? storedKeyFrom(row) : null;
  }

  /** Frees the key if it has expired by `now` (a retry may then claim it again). */
  async deleteIfExpired(scope: string, key: string, now: Date, t?: Transaction): Promise<void> {
    await this.db.execute('DELETE FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2 AND expires_at <= $3', [scope, key, now], t);
  }

  async purgeExpired(): Promise<number> {
    return IdempotencyKeyModel.destroy({ where: { expiresAt: { [Op.lte]: this.clock.now() } } });
  }

  /**
   * PostgreSQL: claims for many requests at once, as a CTE of the caller's statement. `source`
   * names a relation with columns `idem_scope`, `idem_key`, `idem_hash`, `idem_object` (rows with
   * a null key claim nothing); the part returns `scope` and `idempotency_key` of each key it
   * claimed, nothing for a key already held.
   */
  claimPart(name: string, source: string, p: Params): CtePart {
    const now = this.clock.now();
    return {
      name,
      sql: `INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, object_id, state, created_at, expires_at)
      SELECT s.idem_scope, s.idem_key, s.idem_hash, s.idem_object, 'running', ${p.add(now, 'timestamptz')}, ${p.add(this.expiryFrom(now), 'timestamptz')}
        FROM ${source} s WHERE s.idem_key IS NOT NULL
       -- One order for every statement: two batches holding the same keys cannot deadlock.
       ORDER BY s.idem_scope, s.idem_key
      ON CONFLICT (scope, idempotency_key) DO NOTHING
      RETURNING scope, idempotency_key`,
    };
  }

  /**
   * PostgreSQL: answers for many keys claimed with an object, as a CTE of the caller's
   * statement. `source` has `idem_scope`, `idem_key`, `idem_object`, `idem_status`, `idem_body`;
   * only keys still running for that object are written.
   */
  answerPart(name: string, source: string): CtePart {
    return {
      name,
      sql: `UPDATE idempotency_keys k SET state = 'completed', response_status = s.idem_status, response_body = s.idem_body
      FROM ${source} s WHERE s.idem_key IS NOT NULL AND k.scope = s.idem_scope AND k.idempotency_key = s.idem_key
       AND k.object_id = s.idem_object AND k.state = 'running'`,
    };
  }
}

/**
 * A key's columns as read by `read`, for a statement that reads a key with other rows (a public
 * pay reads its object and its key at once): `alias` names idempotency_keys there. storedKeyFrom
 * reads them back (null when the key was not found: a LEFT JOIN's nulls).
 */
export function STORED_KEY_COLUMNS(alias: string): string {
  return `${alias}.request_hash AS key_request_hash, ${alias}.state AS key_state, ${alias}.response_status AS key_response_status,
    ${alias}.response_body AS key_response_body, ${alias}.expires_at AS key_expires_at`;
}

export function storedKeyFrom(row: Record<string, unknown>): StoredKey | null {
  if (row.key_request_hash === null || row.key_request_hash === undefined) return null;
  return {
    requestHash: row.key_request_hash as string,
    state: row.key_state as 'running' | 'completed',
    responseStatus: row.key_response_status === null ? null : Number(row.key_response_status),
    responseBody: (row.key_response_body as string | null) ?? null,
    expiresAt: readTime(row.key_expires_at) as Date,
  };
}

/** Whether a stored answer is the object `id` as recorded with `status` (plain JSON: an object's key is never sealed). */
function answersObjectAs(stored: string, id: string, status: string): boolean {
  try {
    const answer = JSON.parse(stored) as { id?: unknown; status?: unknown } | null;
    return answer !== null && typeof answer === 'object' && answer.id === id && answer.status === status;
  } catch {
    return false; // sealed, or not JSON: not an object's answer
  }
}
