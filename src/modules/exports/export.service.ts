import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Database } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { hasPermission, requirePermission } from '../../core/context';
import { DomainError, isDomainError, notFound } from '../../core/errors';
import { newId, randomBase62 } from '../../core/ids';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import { PRIVATE_FILE_MODE, ensurePrivateDir } from '../../core/private-files';
import { parseInput } from '../../core/validation';
import type { KeysetCursor } from './export.store';
import { PAGE_SIZE_MAX } from '../../core/pagination';
import { withReplicaReads } from '../../db/read-routing';
import { errorForLog, type Logger } from '../../logger';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import { EXPORT_MOVES } from './export-states';
import { PAGING_KEYS, requireSourcePermission, type ExportSource, type ExportSources } from './export-sources';
import { rowEncoder, type RowEncoder } from './export-format';
import { ExportModel } from './export.model';
import { EXPORT_RESOURCES, createExportInput, listExportsInput, type ExportFormat } from './export.inputs';
import type { Export } from './export.schemas';
import { ExportStore, toExportRecord, type ClaimedExport, type ExportRecord } from './export.store';

export type { Export } from './export.schemas';

export interface ExportOptions {
  /** Rows read and written per page (the most the worker holds at once). */
  pageSize?: number;
  /** How long a claim holds an export after each page, on the database's clock. */
  leaseMs?: number;
  /** Claims an export may take before it is failed (a crash, an outage, a full disk each cost one). */
  maxAttempts?: number;
  /** Exports one run of the job makes at most (the rest wait for the next run). */
  perRun?: number;
  /** How long an interrupted export waits before it is claimed again. */
  retryMs?: number;
}

/** How long an export's file is kept: 24 hours from the request (API.md §2). */
export const EXPORT_TTL_MS = 24 * 3_600_000;
// A page of the list itself (PAGE_SIZE_MAX rows, its largest), read by its cursor.
const DEFAULTS = { pageSize: PAGE_SIZE_MAX, leaseMs: 60_000, maxAttempts: 5, perRun: 10, retryMs: 10_000 };

/** An export's file, ready to be sent. */
export interface ExportFile {
  filename: string;
  stream: Readable;
  contentType: string;
  length: number;
}

/** What one run of the job did. */
export interface ExportRun {
  completed: number;
  failed: number;
  /** Claims given back to be retried (an outage) or taken over by another instance. */
  released: number;
  /** Files of expired exports deleted. */
  purged: number;
}

type Outcome = 'completed' | 'failed' | 'released';

/** What the file holds when a claim starts: how much of it a crash left is kept. */
interface FileStart {
  rowsWritten: number;
  bytesWritten: number;
  after: KeysetCursor | null;
}

const MESSAGES = {
  expired: 'The export expired before it was complete',
  attempts: 'The export could not be written after several attempts',
};

/**
 * Exports of a list to a file (API.md §2). A request records what to export (`queued`); the
 * job (`runDue`, workers/jobs.ts) claims it and writes the file under DATA_DIR/exports/<account>/
 * page by page: each page, read by keyset through the resource's own service (the same objects
 * its REST list answers, with the permissions of the key that asked), is appended to the file,
 * synced, and then its position recorded (rows, bytes, the last row's keyset) with the claim's
 * lease renewed. So the worker holds one page at a time whatever the list's size, and a claim
 * taken after a crash cuts the file back to the recorded length and goes on after the recorded
 * row: nothing is written twice, and nothing skipped. Files are owner-only (0600 in 0700
 * directories) and deleted by the same job once the export expires, 24 hours after it was asked
 * for, on the services' clock.
 */
export class ExportService {
  private readonly store: ExportStore;
  private readonly options: typeof DEFAULTS;

  constructor(
    private readonly db: Database,
    private readonly dataDir: string,
    private readonly sources: ExportSources,
    private readonly idempotency: IdempotencyService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** The service's public address, for `url`. */
    private readonly publicBase: () => string,
    options: ExportOptions = {},
  ) {
    this.store = new ExportStore(db);
    this.options = { ...DEFAULTS, ...options };
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<Export> {
    requirePermission(ctx, 'exports', 'write');
    const data = parseInput(createExportInput, input);
    const source = this.sources[data.resource];
    requireSourcePermission(ctx, source);
    const filters = data.filters ?? {};
    const parsed = this.parseFilters(source, filters);
    source.authorize?.(ctx, parsed);
    const now = ctx.clock.now();
    return this.db.transaction((transaction) => this.idempotency.once(transaction, idem, IDEMPOTENT_OPERATIONS.createExport, async () => {
      const row = await ExportModel.create({
        id: newId('exp'), accountId: ctx.accountId, mode: ctx.mode, resource: data.resource, format: data.format,
        filters: JSON.stringify(filters), permissions: JSON.stringify(ctx.permissions), ...EXPORT_MOVES.columns('create', now),
        expiresAt: new Date(now.getTime() + EXPORT_TTL_MS), createdAt: now, updatedAt: now,
      }, { transaction });
      return this.toApi(toExportRecord(row.get({ plain: true })), now);
    }));
  }

  async retrieve(ctx: RequestContext, id: string): Promise<Export> {
    return this.toApi(await this.readable(ctx, id), ctx.clock.now());
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<Export, O>> {
    requirePermission(ctx, 'exports', 'read');
    const input = parseInput(listExportsInput, query);
    const resources = ctx.permissions.includes('*') ? null : EXPORT_RESOURCES.filter((r) => hasPermission(ctx.permissions, this.sources[r].permission, 'read'));
    const page = await this.store.list(ctx, input, resources, options);
    const now = ctx.clock.now();
    return { ...page, data: page.data.map((r) => this.toApi(r, now)) } as PageFor<Export, O>;
  }

  /**
   * The file of a complete export, as a stream read while it is sent: 410 `export_expired` from
   * `expiresAt` on (the job deletes it), 409 `export_not_ready` while queued or running, 422
   * `invalid_state` once failed.
   */
  async file(ctx: RequestContext, id: string): Promise<ExportFile> {
    const record = await this.readable(ctx, id);
    const now = ctx.clock.now();
    if (now.getTime() >= record.expiresAt.getTime() || record.fileDeletedAt) {
      throw new DomainError('export_expired', `This export expired at ${record.expiresAt.toISOString()} and its file was deleted; create the export again`);
    }
    if (record.status === 'failed') throw new DomainError('invalid_state', `This export failed (${record.failureMessage ?? 'no file'}); create it again`);
    if (record.status !== 'complete') {
      throw new DomainError('export_not_ready', `This export is ${record.status} (${record.rowsWritten} rows written); its file can be downloaded once it is complete`);
    }
    const encoder = this.encoder(record);
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(this.filePath(record), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // Several instances must share DATA_DIR for their exports (README): this one has not the file.
      this.logger.error({ exportId: record.id, file: this.filePath(record) }, 'export file missing from DATA_DIR');
      throw new DomainError('service_unavailable', "The export's file is not available on this instance just now; try again");
    }
    const { size } = await handle.stat();
    return {
      filename: `${record.id}.${encoder.extension}`, stream: handle.createReadStream({ autoClose: true }), contentType: encoder.contentType, length: size,
    };
  }

  /**
   * The job: deletes the files of expired exports, then claims and writes owed exports one after
   * another (at most `perRun`), each under its lease. `now` is the services' clock.
   */
  async runDue(now: Date): Promise<ExportRun> {
    const run: ExportRun = { completed: 0, failed: 0, released: 0, purged: await this.purgeExpired(now) };
    // Each export once per run: one given back waits for a later run.
    const had: string[] = [];
    for (let i = 0; i < this.options.perRun; i++) {
      const claim = await this.store.claimNext(now, this.options.leaseMs, randomBase62(24), had);
      if (!claim) break;
      had.push(claim.record.id);
      run[await this.produce(claim)]++;
    }
    return run;
  }

  /** The export, of the caller's account and mode, whose resource the key may read (`exports:read` and `<resource>:read`). */
  private async readable(ctx: RequestContext, id: string): Promise<ExportRecord> {
    requirePermission(ctx, 'exports', 'read');
    const row = await ExportModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('export', id);
    const record = toExportRecord(row as unknown as Record<string, unknown>);
    requireSourcePermission(ctx, this.sources[record.resource]);
    return record;
  }

  /**
   * The filters by the resource's list schema, without its paging: each problem named
   * `filters.<name>`, as is a filter of the list that the export does not apply yet.
   */
  private parseFilters(source: ExportSource, filters: Record<string, unknown>): unknown {
    const paging = Object.keys(filters).find((key) => (PAGING_KEYS as readonly string[]).includes(key));
    if (paging !== undefined) {
      throw new DomainError('unknown_parameter', `'${paging}' is paging, not a filter: an export holds every row its filters match, newest first`, `filters.${paging}`);
    }
    let parsed: unknown;
    try {
      parsed = parseInput(source.filters, filters);
    } catch (err) {
      if (!isDomainError(err) || !err.param) throw err;
      const param = `filters.${err.param}`;
      throw new DomainError(err.code, err.message.replace(`'${err.param}'`, `'${param}'`), param, { cause: err.cause });
    }
    return parsed;
  }

  private encoder(record: ExportRecord): RowEncoder {
    return rowEncoder(record.format, this.sources[record.resource].columns);
  }

  /** DATA_DIR/exports/<account>/<id>.<csv|jsonl>: ids are generated (prefix and base62), never caller text. */
  private filePath(record: Pick<ExportRecord, 'id' | 'accountId' | 'format'>): string {
    for (const part of [record.id, record.accountId]) if (!/^[A-Za-z0-9_]+$/.test(part)) throw new Error(`unexpected id in an export's path: ${part}`);
    return path.join(this.dataDir, 'exports', record.accountId, `${record.id}.${record.format satisfies ExportFormat}`);
  }

  private toApi(record: ExportRecord, now: Date): Export {
    const complete = record.status === 'complete';
    const available = complete && !record.fileDeletedAt && now.getTime() < record.expiresAt.getTime();
    const progress = complete ? 1 : record.rowsExpected ? Math.min(0.99, Math.floor((record.rowsWritten / record.rowsExpected) * 100) / 100) : 0;
    return {
      id: record.id,
      object: 'export',
      livemode: record.mode === 'live',
      resource: record.resource,
      format: record.format,
      filters: record.filters,
      status: record.status,
      rowCount: record.rowsWritten,
      progress,
      failureMessage: record.failureMessage,
      url: available ? `${this.publicBase()}/v1/exports/${record.id}/file` : null,
      expiresAt: record.expiresAt.toISOString(),
      completedAt: record.completedAt?.toISOString() ?? null,
      createdAt: record.createdAt.toISOString(),
      updatedAt: record.updatedAt.toISOString(),
    };
  }

  /** One claimed export written to its end; a failure worth retrying gives the claim back, and a claim lost to another instance stops. */
  private async produce(claim: ClaimedExport): Promise<Outcome> {
    const { record } = claim;
    const log = this.logger.child({ exportId: record.id });
    const source = this.sources[record.resource];
    // The key's permissions, as they were when it asked: the export sees what that key saw.
    const ctx: RequestContext = {
      accountId: record.accountId, mode: record.mode, permissions: record.permissions, requestId: `export_${record.id}`, clock: this.clock,
    };
    const file = this.filePath(record);
    // Claimed this often, it dies with whatever claims it (a process killed by each page, say).
    if (record.attempts > this.options.maxAttempts) {
      if (await this.store.fail(record.id, claim.lockToken, MESSAGES.attempts, this.clock.now())) await removeFile(file);
      log.error({ attempts: record.attempts }, 'export failed');
      return 'failed';
    }
    let handle: fs.promises.FileHandle | undefined;
    try {
      const filters = parseInput(source.filters, record.filters);
      const encoder = this.encoder(record);
      ensurePrivateDir(path.dirname(file));
      const opened = await this.openFile(claim, file, encoder, ctx);
      if (!opened) return 'released';
      handle = opened.handle;
      let { rowsWritten, bytesWritten, after } = opened.start;
      for (;;) {
        const rows = await this.fromReplica(record, () => source.page(ctx, filters, after, this.options.pageSize));
        if (rows.length > 0) {
          const chunk = Buffer.from(encoder.rows(rows), 'utf8');
          await handle.write(chunk, 0, chunk.length, bytesWritten);
          // On disk before the position says so: a crash after this never loses a row it recorded.
          await handle.datasync();
          bytesWritten += chunk.length;
          rowsWritten += rows.length;
          const last = rows[rows.length - 1];
          after = { createdAt: last.createdAt, id: last.id };
          if (!(await this.store.progress(claim, { rowsWritten, bytesWritten, resumeAfter: after }, this.clock.now(), this.options.leaseMs))) {
            log.warn('export claim lost to another worker; stopped');
            return 'released';
          }
        }
        if (rows.length < this.options.pageSize) break;
      }
      await handle.close();
      handle = undefined;
      if (!(await this.store.complete(claim, rowsWritten, this.clock.now()))) return 'released';
      log.info({ resource: record.resource, format: record.format, rows: rowsWritten, bytes: bytesWritten }, 'export complete');
      return 'completed';
    } catch (err) {
      await handle?.close().catch(() => undefined);
      handle = undefined;
      // A refusal by the service (the filters, a permission) does the same on every try; an
      // outage or a full disk may pass.
      const final = (isDomainError(err) && err.code !== 'service_unavailable') || record.attempts >= this.options.maxAttempts;
      log[final ? 'error' : 'warn']({ err: errorForLog(err), attempt: record.attempts }, final ? 'export failed' : 'export interrupted; it resumes at the next run');
      if (!final) {
        await this.store.release(claim, this.clock.now(), this.options.retryMs).catch(() => undefined);
        return 'released';
      }
      const message = isDomainError(err) && err.code !== 'service_unavailable' ? err.message : MESSAGES.attempts;
      if (await this.store.fail(record.id, claim.lockToken, message, this.clock.now())) await removeFile(file);
      return 'failed';
    } finally {
      await handle?.close().catch(() => undefined);
    }
  }

  /**
   * The file as this claim starts it: kept up to the recorded length and resumed after the
   * recorded row when it holds at least that much (a crash may have left a page written but not
   * recorded: it is cut off); otherwise started again, with its header, and the rows counted for
   * the progress. Null when the claim was lost meanwhile.
   */
  private async openFile(
    claim: ClaimedExport, file: string, encoder: RowEncoder, ctx: RequestContext,
  ): Promise<{ handle: fs.promises.FileHandle; start: FileStart } | null> {
    const { record } = claim;
    if (record.bytesWritten > 0) {
      const handle = await fs.promises.open(file, 'r+').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return null;
        throw err;
      });
      if (handle) {
        if ((await handle.stat()).size >= record.bytesWritten) {
          await handle.truncate(record.bytesWritten);
          return { handle, start: { rowsWritten: record.rowsWritten, bytesWritten: record.bytesWritten, after: record.resumeAfter } };
        }
        await handle.close();
      }
      this.logger.warn({ exportId: record.id }, 'export file shorter than recorded; starting it again');
    }
    const rowsExpected = await this.fromReplica(record, () => this.sources[record.resource].count(ctx, record.filters));
    const handle = await fs.promises.open(file, 'w', PRIVATE_FILE_MODE);
    try {
      // In case the umask took a bit, or the file was there before with another mode.
      await handle.chmod(PRIVATE_FILE_MODE);
      const header = Buffer.from(encoder.header(), 'utf8');
      if (header.length > 0) await handle.write(header, 0, header.length, 0);
      await handle.datasync();
      const start = { rowsWritten: 0, bytesWritten: header.length, after: null };
      if (!(await this.store.progress(claim, { ...start, resumeAfter: null, rowsExpected }, this.clock.now(), this.options.leaseMs))) {
        await handle.close();
        return null;
      }
      return { handle, start };
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * An export's reads of its list: from a read replica when one is configured and holds every
   * commit made before the export was asked for (otherwise from the primary); its progress is
   * written to the primary.
   */
  private fromReplica<T>(record: ExportRecord, read: () => Promise<T>): Promise<T> {
    return withReplicaReads(read, { notBefore: record.createdAt.getTime() });
  }

  /** Deletes the files of exports past their expiry (failing any that never completed); returns how many. */
  private async purgeExpired(now: Date): Promise<number> {
    let purged = 0;
    for (const record of await this.store.expired(now, 100)) {
      if (record.status === 'queued' || record.status === 'running') await this.store.fail(record.id, null, MESSAGES.expired, now);
      await removeFile(this.filePath(record));
      await this.store.markFileDeleted(record.id, now);
      purged++;
    }
    return purged;
  }
}

async function removeFile(file: string): Promise<void> {
  await fs.promises.rm(file, { force: true });
}
