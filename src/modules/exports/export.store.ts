import type { Database } from '../../db/database';
import { readJson, readTime } from '../../db/database';
import { Filter, listPage, modelSource } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import { ExportModel } from './export.model';
import { EXPORT_MOVES, type ExportStatus } from './export-states';
import type { ExportFormat, ExportResource } from './export.inputs';

type Scope = { accountId: string; mode: string };
type Row = Record<string, unknown>;

/** An export as stored. */
/** A row's place in a list's default order (createdAt, then id, both descending): where an export's next page starts (its id is the list's cursor). */
export interface KeysetCursor {
  /** ISO 8601 with milliseconds, as the API object gives it. */
  createdAt: string;
  id: string;
}

export interface ExportRecord {
  id: string;
  accountId: string;
  mode: 'test' | 'live';
  resource: ExportResource;
  format: ExportFormat;
  filters: Record<string, unknown>;
  permissions: string[];
  status: ExportStatus;
  attempts: number;
  rowsExpected: number | null;
  rowsWritten: number;
  bytesWritten: number;
  resumeAfter: KeysetCursor | null;
  failureMessage: string | null;
  expiresAt: Date;
  completedAt: Date | null;
  fileDeletedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** An export a worker holds: the record and the claim's token, which each of its writes names. */
export interface ClaimedExport {
  record: ExportRecord;
  lockToken: string;
}

/** Where the file stands after a page: what a claim after a crash resumes from. */
export interface ExportPosition {
  rowsWritten: number;
  bytesWritten: number;
  resumeAfter: KeysetCursor | null;
  /** Set when the file starts (again) from scratch. */
  rowsExpected?: number | null;
}

/** The columns of a claimed row (the model's attributes under their names); read once the model is initialised. */
const columns = () => modelSource(ExportModel).columns;

/**
 * Exports' statements: the list, and the worker's claim (one export at a time, oldest first,
 * leased on the database's clock; SKIP LOCKED on PostgreSQL so instances share them), its
 * progress after each page (renewing the lease, and only while the claim is still its own), and
 * the expiry job's. Statuses are written through EXPORT_MOVES.
 */
export class ExportStore {
  constructor(private readonly db: Database) {}

  list<O extends ListOptions = Counted>(
    scope: Scope, input: ListParams<'createdAt'> & { status?: string; resource?: string }, resources: readonly string[] | null, options?: O,
  ): Promise<PageFor<ExportRecord, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, status: input.status, resource: input.resource });
    // Only the exports of resources the key may read.
    if (resources !== null) filter.raw((param) => this.db.inJsonList('resource', param(JSON.stringify(resources))));
    return listPage(this.db, { ...modelSource(ExportModel), filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toExportRecord }, options);
  }

  /**
   * Leases the oldest export still owed (queued, or running with its lease run out: its worker
   * died) and not expired, for `leaseMs`, counting the attempt; null when none is. `skip`: the
   * exports this run has had already.
   */
  async claimNext(now: Date, leaseMs: number, lockToken: string, skip: readonly string[] = []): Promise<ClaimedExport | null> {
    const owed = `${EXPORT_MOVES.sqlFrom('start')} AND expires_at > $1 AND (locked_until IS NULL OR locked_until < ${this.db.nowSql})
      AND ${this.db.notInJsonList('id', '$4')}`;
    const set = `${EXPORT_MOVES.sqlSet('start')}, attempts = attempts + 1, lock_token = $3, locked_until = ${this.db.nowPlusSql('$2')}, updated_at = $1`;
    if (this.db.dialect === 'postgres') {
      const [row] = await this.db.select(
        `WITH chosen AS (SELECT id FROM exports WHERE ${owed} ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
         UPDATE exports SET ${set} FROM chosen WHERE exports.id = chosen.id
         RETURNING ${columns().split(',').map((c) => `exports.${c.trim()}`).join(', ')}`,
        [now, Math.ceil(leaseMs), lockToken, JSON.stringify(skip)],
      );
      return row ? { record: toExportRecord(row), lockToken } : null;
    }
    // Most runs find nothing owed: look before queueing for the write lock.
    const [any] = await this.db.select(`SELECT id FROM exports WHERE ${owed.replace('$4', '$2')} LIMIT 1`, [now, JSON.stringify(skip)]);
    if (!any) return null;
    const row = await this.db.transaction(async (t) => {
      const claimed = await this.db.execute(
        `UPDATE exports SET ${set} WHERE id = (SELECT id FROM exports WHERE ${owed} ORDER BY created_at, id LIMIT 1)`,
        [now, Math.ceil(leaseMs), lockToken, JSON.stringify(skip)],
        t,
      );
      if (claimed === 0) return undefined;
      return (await this.db.select(`SELECT ${columns()} FROM exports WHERE lock_token = $1`, [lockToken], t))[0];
    });
    return row ? { record: toExportRecord(row), lockToken } : null;
  }

  /** Records where the file stands and renews the lease; false when the claim is no longer this one's (nothing written). */
  async progress(claim: ClaimedExport, position: ExportPosition, now: Date, leaseMs: number): Promise<boolean> {
    const expected = position.rowsExpected !== undefined;
    const changed = await this.db.executeAlone(
      `UPDATE exports SET rows_written = $1, bytes_written = $2, resume_after = $3, updated_at = $4, locked_until = ${this.db.nowPlusSql('$5')}
              ${expected ? ', rows_expected = $8' : ''}
        WHERE id = $6 AND lock_token = $7 AND status = '${EXPORT_MOVES.rule('start').to}'`,
      [
        position.rowsWritten, position.bytesWritten, position.resumeAfter ? JSON.stringify(position.resumeAfter) : null, now, Math.ceil(leaseMs),
        claim.record.id, claim.lockToken, ...(expected ? [position.rowsExpected] : []),
      ],
    );
    return changed === 1;
  }

  /** The file is whole: `complete`, the claim ended. False when the claim was no longer this one's. */
  async complete(claim: ClaimedExport, rowsWritten: number, now: Date): Promise<boolean> {
    const changed = await this.db.executeAlone(
      `UPDATE exports SET ${EXPORT_MOVES.sqlSet('complete', '$1')}, rows_written = $2, updated_at = $1, lock_token = NULL, locked_until = NULL
        WHERE id = $3 AND lock_token = $4 AND ${EXPORT_MOVES.sqlFrom('complete')}`,
      [now, rowsWritten, claim.record.id, claim.lockToken],
    );
    return changed === 1;
  }

  /** `failed` with its reason, from queued or running; with a claim, only while it is that claim's. */
  async fail(id: string, lockToken: string | null, message: string, now: Date): Promise<boolean> {
    const changed = await this.db.executeAlone(
      `UPDATE exports SET ${EXPORT_MOVES.sqlSet('fail')}, failure_message = $1, updated_at = $2, lock_token = NULL, locked_until = NULL
        WHERE id = $3 AND ${EXPORT_MOVES.sqlFrom('fail')}${lockToken === null ? '' : ' AND lock_token = $4'}`,
      [message, now, id, ...(lockToken === null ? [] : [lockToken])],
    );
    return changed === 1;
  }

  /** Gives the claim up (a failure worth retrying): claimed again, and resumed, once `retryMs` have passed. */
  async release(claim: ClaimedExport, now: Date, retryMs: number): Promise<void> {
    await this.db.executeAlone(
      `UPDATE exports SET lock_token = NULL, locked_until = ${this.db.nowPlusSql('$4')}, updated_at = $1 WHERE id = $2 AND lock_token = $3`,
      [now, claim.record.id, claim.lockToken, Math.ceil(retryMs)],
    );
  }

  /** Exports past their expiry whose file is not deleted yet, oldest expiry first (exports_expiry_idx). */
  async expired(now: Date, limit: number): Promise<ExportRecord[]> {
    const rows = await this.db.select(
      `SELECT ${columns()} FROM exports WHERE file_deleted_at IS NULL AND expires_at <= $1 ORDER BY expires_at LIMIT ${Number(limit)}`,
      [now],
    );
    return rows.map(toExportRecord);
  }

  async markFileDeleted(id: string, now: Date): Promise<void> {
    await this.db.executeAlone('UPDATE exports SET file_deleted_at = $1, updated_at = $1 WHERE id = $2', [now, id]);
  }
}

export function toExportRecord(row: Row): ExportRecord {
  return {
    id: row.id as string,
    accountId: row.accountId as string,
    mode: row.mode as 'test' | 'live',
    resource: row.resource as ExportResource,
    format: row.format as ExportFormat,
    filters: readJson<Record<string, unknown>>(row.filters, {}),
    permissions: readJson<string[]>(row.permissions, []),
    status: row.status as ExportStatus,
    attempts: Number(row.attempts ?? 0),
    rowsExpected: row.rowsExpected === null || row.rowsExpected === undefined ? null : Number(row.rowsExpected),
    rowsWritten: Number(row.rowsWritten ?? 0),
    bytesWritten: Number(row.bytesWritten ?? 0),
    resumeAfter: readJson<KeysetCursor | null>(row.resumeAfter, null),
    failureMessage: (row.failureMessage as string | null) ?? null,
    expiresAt: readTime(row.expiresAt) as Date,
    completedAt: readTime(row.completedAt),
    fileDeletedAt: readTime(row.fileDeletedAt),
    createdAt: readTime(row.createdAt) as Date,
    updatedAt: readTime(row.updatedAt) as Date,
  };
}
