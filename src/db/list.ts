import { Op, literal, type Sequelize, type WhereOptions } from 'sequelize';
import type { ModelStatic, Model } from 'sequelize';
import type { ListParams, Page } from '../core/pagination';
import type { Database } from './database';

/** Escapes LIKE wildcards in user text; used with ESCAPE '\'. */
export function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Case-insensitive substring match on any of the given columns (wildcards in `text` are literal). */
export function searchAny(sequelize: Sequelize, columns: string[], text: string) {
  const pattern = sequelize.escape(likePattern(text));
  // SQLite has no default LIKE escape character, so name it on both dialects.
  return {
    [Op.or]: columns.map((c) => literal(`LOWER(${sequelize.getQueryInterface().quoteIdentifier(c)}) LIKE ${pattern} ESCAPE '\\'`)),
  };
}

/**
 * A page of plain rows (no model instances): count and rows in parallel, ordered by the sort
 * column with the id as tie-breaker so pages never overlap.
 */
export async function pageOf<M extends Model, T>(
  model: ModelStatic<M>,
  where: WhereOptions,
  params: ListParams,
  sortColumns: Record<string, string>,
  toApi: (row: Record<string, unknown>) => T,
): Promise<Page<T>> {
  const dir = params.sortDirection === 'asc' ? 'ASC' : 'DESC';
  const sortAttribute = sortColumns[params.sortField] ?? 'createdAt';
  const [rows, total] = await Promise.all([
    model.findAll({
      where,
      order: [
        [sortAttribute, dir],
        ['id', dir],
      ],
      limit: params.pageSize,
      offset: (params.page - 1) * params.pageSize,
      raw: true,
    }),
    model.count({ where }),
  ]);
  return {
    data: (rows as unknown as Record<string, unknown>[]).map(toApi),
    total,
    page: params.page,
    pageSize: params.pageSize,
  };
}

export function isUniqueViolation(err: unknown): boolean {
  const e = err as { name?: string; code?: string; message?: string };
  // Sequelize's class for model calls; SQLSTATE 23505 for raw pg statements; SQLite's own error
  // for raw SQLite statements.
  return e?.name === 'SequelizeUniqueConstraintError' || e?.code === '23505'
    || (e?.code === 'SQLITE_CONSTRAINT' && /UNIQUE constraint failed/.test(e.message ?? ''));
}

/** Conditions and their bound values, numbered as they are added. */
export class Filter {
  readonly clauses: string[] = [];
  readonly bind: unknown[] = [];
  constructor(initial: Record<string, unknown>) {
    for (const [column, value] of Object.entries(initial)) this.eq(column, value);
  }
  /** Adds `column = $n`; undefined values are skipped. */
  eq(column: string, value: unknown): this {
    if (value !== undefined) this.clauses.push(`${column} = ${this.param(value)}`);
    return this;
  }
  raw(clause: (param: (value: unknown) => string) => string): this {
    this.clauses.push(clause((v) => this.param(v)));
    return this;
  }
  param(value: unknown): string {
    this.bind.push(value);
    return `$${this.bind.length}`;
  }
  get sql(): string {
    return this.clauses.join(' AND ');
  }
}

/** A page of raw rows plus the total, with a stable order (sort column, then id). */
export async function rawPage<R>(
  db: import('./database').Database,
  opts: { table: string; columns: string; filter: Filter; sortColumn: string; params: ListParams },
): Promise<{ rows: R[]; total: number }> {
  const dir = opts.params.sortDirection === 'asc' ? 'ASC' : 'DESC';
  const offset = (opts.params.page - 1) * opts.params.pageSize;
  const where = opts.filter.sql;
  // Paging values are bound too, so each filter shape is one prepared statement.
  const n = opts.filter.bind.length;
  const [rows, [count]] = await Promise.all([
    db.select<R>(
      `SELECT ${opts.columns} FROM ${opts.table} WHERE ${where} ORDER BY ${opts.sortColumn} ${dir}, id ${dir} LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...opts.filter.bind, opts.params.pageSize, offset],
    ),
    db.select<{ total: number }>(`SELECT COUNT(*) AS total FROM ${opts.table} WHERE ${where}`, opts.filter.bind),
  ]);
  return { rows, total: Number(count.total) };
}

/**
 * Takes over a pending row whose lease has run out, for `leaseMs` more: of several instances
 * exactly one gets it. Returns whether this caller did.
 */
export async function claimExpiredLease(
  db: import('./database').Database,
  table: 'payments' | 'refunds',
  id: string,
  now: Date,
  leaseMs: number,
): Promise<boolean> {
  const claimed = await db.execute(
    `UPDATE ${table} SET lease_until = $1 WHERE id = $2 AND status = 'pending' AND lease_until < $3`,
    [new Date(now.getTime() + leaseMs), id, now],
  );
  return claimed === 1;
}

/** How many objects a nested GraphQL list (`Customer.payments`, `Payment.refunds`, …) holds. */
export const NESTED_LIST_LIMIT = 100;

/**
 * The `limit` newest rows (created_at, then id, descending) of each of many parents in one query,
 * for DataLoader. `from` may join (`payment_methods pm JOIN customers c …`); `prefix` is then the
 * main table's alias with its dot, and `columns` must name `created_at` and `id` unqualified.
 * The parent ids are bound as one JSON array, so the statement's text (and on PostgreSQL its
 * prepared plan) is the same whatever the number of parents.
 */
export async function newestPerParent<R>(
  db: Database,
  opts: { columns: string; from: string; prefix?: string; parentColumn: string; accountId: string; mode: string; parentIds: readonly string[]; limit?: number },
): Promise<R[]> {
  const ids = [...new Set(opts.parentIds)];
  if (ids.length === 0) return [];
  const a = opts.prefix ?? '';
  const parent = `${a}${opts.parentColumn}`;
  const idList = db.dialect === 'postgres' ? 'SELECT json_array_elements_text($4::json)' : 'SELECT value FROM json_each($4)';
  return db.select<R>(
    `SELECT * FROM (
       SELECT ${opts.columns}, ROW_NUMBER() OVER (PARTITION BY ${parent} ORDER BY ${a}created_at DESC, ${a}id DESC) AS rank_in_parent
         FROM ${opts.from} WHERE ${a}account_id = $1 AND ${a}mode = $2 AND ${parent} IN (${idList})
     ) ranked WHERE rank_in_parent <= $3 ORDER BY created_at DESC, id DESC`,
    [opts.accountId, opts.mode, opts.limit ?? NESTED_LIST_LIMIT, JSON.stringify(ids)],
  );
}

/** Rows grouped by a key, in the order given. */
export function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
