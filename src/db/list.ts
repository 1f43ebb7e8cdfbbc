import type { ModelStatic, Model } from 'sequelize';
import { DomainError } from '../core/errors';
import type { Counted, ListOptions, ListParams, PageFor } from '../core/pagination';
import type { Database } from './database';

/** Escapes LIKE wildcards in user text; used with ESCAPE '\'. */
export function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
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
  /** The `eq` conditions by column: a list's cursor is looked up in its scope (account_id, mode) by them. */
  readonly equals = new Map<string, unknown>();
  constructor(initial: Record<string, unknown> = {}) {
    for (const [column, value] of Object.entries(initial)) this.eq(column, value);
  }
  /** Adds `column = $n`; undefined values are skipped. */
  eq(column: string, value: unknown): this {
    if (value !== undefined) {
      this.clauses.push(`${column} = ${this.param(value)}`);
      this.equals.set(column, value);
    }
    return this;
  }
  /** Adds `column IN ($n, …)` for several values (`column = $n` for one); undefined or empty adds nothing. */
  anyOf(column: string, values: readonly unknown[] | undefined): this {
    if (!values || values.length === 0) return this;
    if (values.length === 1) return this.eq(column, values[0]);
    this.clauses.push(`${column} IN (${values.map((v) => this.param(v)).join(', ')})`);
    return this;
  }
  /** Case-insensitive substring match on any of the columns (wildcards in `text` are literal); empty text adds nothing. */
  search(columns: string[], text: string | undefined): this {
    if (!text) return this;
    // SQLite has no default LIKE escape character, so name it on both dialects.
    return this.raw((param) => {
      const pattern = param(likePattern(text));
      return `(${columns.map((c) => `LOWER(${c}) LIKE ${pattern} ESCAPE '\\'`).join(' OR ')})`;
    });
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

/** A table and the columns a list reads from it. */
export interface ListSource {
  table: string;
  columns: string;
}

const modelSources = new WeakMap<object, ListSource>();

/**
 * A model's table with every column under its attribute name, the keys `findAll({ raw: true })`
 * gives, so the model's own to-API mapper reads list rows unchanged.
 */
export function modelSource(model: ModelStatic<Model>): ListSource {
  let source = modelSources.get(model);
  if (!source) {
    const columns = Object.entries(model.getAttributes()).map(([attribute, definition]) => {
      const field = definition.field ?? attribute;
      return field === attribute ? field : `${field} AS "${attribute}"`;
    });
    source = { table: model.getTableName() as string, columns: columns.join(', ') };
    modelSources.set(model, source);
  }
  return source;
}

export interface ListQuery<R, T, F extends string> extends ListSource {
  filter: Filter;
  params: ListParams<F>;
  /** sortField → column: the only columns the statement may be ordered by. */
  sortColumns: Record<NoInfer<F>, string>;
  toApi: (row: R) => T;
  /** The total when it is kept rather than counted (the payments list's, see PaymentCountStore): used instead of `COUNT(*)`. */
  total?: () => Promise<number>;
}

/** The column a list is sorted by (see listPage). */
function sortColumn<F extends string>(query: { params: ListParams<F>; sortColumns: Record<F, string> }): string {
  const { params } = query;
  const sortColumns: Record<string, string> = query.sortColumns;
  if (!Object.hasOwn(sortColumns, params.sortField)) {
    throw new DomainError('invalid_parameter', `sortField must be one of ${Object.keys(sortColumns).join(', ')}`, 'sortField');
  }
  return sortColumns[params.sortField];
}

/** A list's ORDER BY: the sort column, then the id, in one direction (reversed: read backwards from a cursor). */
function listOrder<F extends string>(query: { params: ListParams<F>; sortColumns: Record<F, string> }, reversed = false): string {
  const asc = (query.params.sortDirection === 'asc') !== reversed;
  const dir = asc ? 'ASC' : 'DESC';
  return `${sortColumn(query)} ${dir}, id ${dir}`;
}

/**
 * The conditions every list takes from its params besides its own filters: the created range,
 * `updatedAfter`. Added to `filter` (so the count sees them too).
 */
function withCommonFilters(filter: Filter, params: ListParams): Filter {
  if (params.createdAfter !== undefined) filter.raw((p) => `created_at > ${p(params.createdAfter)}`);
  if (params.createdBefore !== undefined) filter.raw((p) => `created_at < ${p(params.createdBefore)}`);
  if (params.updatedAfter !== undefined) filter.raw((p) => `updated_at > ${p(params.updatedAfter)}`);
  return filter;
}

/**
 * The one way a list is read: a page of plain rows (bound statements, no model instances) and
 * the total, counted in parallel unless `options.countTotal` is false (then `total` is null and
 * no COUNT runs: a GraphQL list whose `total` is not selected), or taken from `query.total` when
 * the list keeps it. Ordered by the sort column then
 * the id, in the same direction, so equal sort values never make pages overlap or skip rows.
 * Paging values are bound too, so each filter shape is one prepared statement.
 *
 * A sortField outside `sortColumns` is refused (invalid_parameter, param sortField) rather than
 * mapped to a default: the list schema's enum already refuses it, so reaching here means the
 * schema and the whitelist disagree, and a silent default would hide that. Only the whitelist's
 * column names ever reach the SQL text.
 */
export async function listPage<R = Record<string, unknown>, T = R, F extends string = string, O extends ListOptions = Counted>(
  db: Database,
  query: ListQuery<R, T, F>,
  options?: O,
): Promise<PageFor<T, O>> {
  const { params } = query;
  sortColumn(query); // a sortField outside the whitelist is refused before any statement runs
  const filter = withCommonFilters(query.filter, params);
  const where = filter.sql ? ` WHERE ${filter.sql}` : '';
  const counted = options?.countTotal !== false;
  // The kept total counts the list without the common filters: counted when they narrow it.
  const narrowed = params.createdAfter !== undefined || params.createdBefore !== undefined || params.updatedAfter !== undefined;
  const [read, count] = await Promise.all([
    readPage(db, query, filter),
    !counted ? null
      : query.total && !narrowed ? query.total()
        : db.select<{ total: number | string }>(`SELECT COUNT(*) AS total FROM ${query.table}${where}`, filter.bind).then((r) => Number(r[0].total)),
  ]);
  const total = count ?? null;
  // `total` is null only when options said not to count, which is what PageFor<T, O> says.
  return {
    data: read.rows.map((row) => query.toApi(row)), total, page: read.byCursor ? null : params.page, pageSize: params.pageSize, hasMore: read.hasMore,
  } as PageFor<T, O>;
}

/**
 * The rows of one page, and whether more follow it: one row more than the page is read. By page
 * number, an OFFSET; by cursor (`startingAfter`/`endingBefore`), a keyset: the rows past the
 * cursor's (sort value, id) in the list's order, the cursor's own row read in the same statement
 * from the list's scope (its `account_id` and `mode`, not its other filters: an object that left
 * the filtered list since is still a place in it). Read backwards from `endingBefore` and turned
 * round. A cursor the scope does not hold is a 400 naming it.
 */
async function readPage<R, T, F extends string>(
  db: Database,
  query: ListQuery<R, T, F>,
  filter: Filter,
): Promise<{ rows: R[]; hasMore: boolean; byCursor: boolean }> {
  const { params } = query;
  const cursor = params.startingAfter ?? params.endingBefore;
  const n = filter.bind.length;
  if (cursor === undefined) {
    const where = filter.sql ? ` WHERE ${filter.sql}` : '';
    const rows = await db.select<R>(
      `SELECT ${query.columns} FROM ${query.table}${where} ORDER BY ${listOrder(query)} LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...filter.bind, params.pageSize + 1, (params.page - 1) * params.pageSize],
    );
    return { rows: rows.slice(0, params.pageSize), hasMore: rows.length > params.pageSize, byCursor: false };
  }
  const backwards = params.startingAfter === undefined;
  const column = sortColumn(query);
  // Past the cursor in the order read: after it descending is below it.
  const below = (params.sortDirection === 'asc') === backwards;
  const scope = new Filter({ id: cursor, account_id: filter.equals.get('account_id'), mode: filter.equals.get('mode') });
  const scopeSql = scope.sql.replace(/\$(\d+)/g, (_m, i: string) => `$${n + Number(i)}`);
  const keyset = `(${column}, id) ${below ? '<' : '>'} (SELECT ${column}, id FROM ${query.table} WHERE ${scopeSql})`;
  const where = ` WHERE ${filter.sql ? `${filter.sql} AND ` : ''}${keyset}`;
  const m = n + scope.bind.length;
  const rows = await db.select<R>(
    `SELECT ${query.columns} FROM ${query.table}${where} ORDER BY ${listOrder(query, backwards)} LIMIT $${m + 1}`,
    [...filter.bind, ...scope.bind, params.pageSize + 1],
  );
  if (rows.length === 0) {
    const found = await db.select(`SELECT id FROM ${query.table} WHERE ${scope.sql}`, scope.bind);
    if (found.length === 0) {
      const name = backwards ? 'endingBefore' : 'startingAfter';
      throw new DomainError('invalid_parameter', `${name} is not an object of this list: ${cursor}`, name);
    }
  }
  const page = rows.slice(0, params.pageSize);
  if (backwards) page.reverse();
  return { rows: page, hasMore: rows.length > params.pageSize, byCursor: true };
}

/**
 * The same page of each of many parents' lists (`query.filter` minus the parent), in one
 * statement for the rows and, unless `options.countTotal` is false, one for the totals, however
 * many parents: a page per parent for DataLoader. Ordered as listPage orders one list; parents
 * without rows get an empty page. The parent ids are bound as one JSON array (see newestPerParent).
 */
export async function pagePerParent<R, T, F extends string, O extends ListOptions = Counted>(
  db: Database,
  query: ListQuery<R, T, F> & { parentColumn: string; parentIds: readonly string[]; parentOf: (item: T) => string },
  options?: O,
): Promise<Map<string, PageFor<T, O>>> {
  const { params } = query;
  if (params.startingAfter !== undefined || params.endingBefore !== undefined) {
    const name = params.startingAfter !== undefined ? 'startingAfter' : 'endingBefore';
    throw new DomainError('invalid_parameter', 'A nested list is read by page number; for cursors read the top-level list with its filter', name === 'startingAfter' ? 'after' : 'before');
  }
  const filter = withCommonFilters(query.filter, params);
  const order = listOrder(query);
  const ids = [...new Set(query.parentIds)];
  const pages = new Map<string, PageFor<T, O>>();
  if (ids.length === 0) return pages;
  const n = filter.bind.length;
  const where = `${filter.sql ? `${filter.sql} AND ` : ''}${db.inJsonList(query.parentColumn, `$${n + 1}`)}`;
  const counted = options?.countTotal !== false;
  const offset = (params.page - 1) * params.pageSize;
  // PostgreSQL reads each parent's page alone (LATERAL … LIMIT): from the parent's index, only
  // the rows up to the page's end, however many the parent has. SQLite, which has no LATERAL,
  // ranks each parent's rows and keeps the page's.
  const pageRows = db.dialect === 'postgres'
    ? db.select<R>(
      `SELECT page.* FROM json_array_elements_text($${n + 1}::json) WITH ORDINALITY AS parent(id, position)
         CROSS JOIN LATERAL (
           SELECT ${query.columns}, ROW_NUMBER() OVER (ORDER BY ${order}) AS rank_in_parent
             FROM ${query.table} WHERE ${filter.sql ? `${filter.sql} AND ` : ''}${query.parentColumn} = parent.id
            ORDER BY ${order} LIMIT $${n + 3} OFFSET $${n + 2}
         ) page
        ORDER BY parent.position, page.rank_in_parent`,
      // One row more than the page: whether more follow.
      [...filter.bind, JSON.stringify(ids), offset, params.pageSize + 1],
    )
    : db.select<R>(
      `SELECT * FROM (
         SELECT ${query.columns}, ROW_NUMBER() OVER (PARTITION BY ${query.parentColumn} ORDER BY ${order}) AS rank_in_parent
           FROM ${query.table} WHERE ${where}
       ) ranked WHERE rank_in_parent > $${n + 2} AND rank_in_parent <= $${n + 3} ORDER BY rank_in_parent`,
      [...filter.bind, JSON.stringify(ids), offset, offset + params.pageSize + 1],
    );
  const [rows, counts] = await Promise.all([
    pageRows,
    counted
      ? db.select<{ parent_id: string; total: number | string }>(
        `SELECT ${query.parentColumn} AS parent_id, COUNT(*) AS total FROM ${query.table} WHERE ${where} GROUP BY ${query.parentColumn}`,
        [...filter.bind, JSON.stringify(ids)],
      )
      : null,
  ]);
  const totals = new Map((counts ?? []).map((c) => [c.parent_id, Number(c.total)]));
  const items = groupBy(rows.map((row) => query.toApi(row)), query.parentOf);
  for (const id of ids) {
    const data = items.get(id) ?? [];
    // `total` is null only when options said not to count, as PageFor<T, O> says.
    const page = {
      data: data.slice(0, params.pageSize), total: counted ? totals.get(id) ?? 0 : null, page: params.page, pageSize: params.pageSize, hasMore: data.length > params.pageSize,
    };
    pages.set(id, page as PageFor<T, O>);
  }
  return pages;
}

export const NESTED_LIST_LIMIT = 100;

/**
 * The `limit` newest rows (created_at, then id, descending) of each of many parents in one query,
 * for DataLoader. `from` may join (`payment_methods pm JOIN customers c …`); `prefix` is then the
 * main table's alias with its dot, and `columns` must name `created_at` and `id` unqualified.
 * The parent ids are bound as one JSON array, so the statement's text (and on PostgreSQL its
 * prepared plan) is the same whatever the number of parents. With `after` (a row's id, `from`
 * then a plain table), only the rows older than that one (a keyset, as listPage's cursors): the
 * next page of a nested list; an id `from` does not hold in the scope gives none.
 */
export async function newestPerParent<R>(
  db: Database,
  opts: { columns: string; from: string; prefix?: string; parentColumn: string; accountId: string; mode: string; parentIds: readonly string[]; limit?: number; after?: string },
): Promise<R[]> {
  const ids = [...new Set(opts.parentIds)];
  if (ids.length === 0) return [];
  const a = opts.prefix ?? '';
  const parent = `${a}${opts.parentColumn}`;
  const bind: unknown[] = [opts.accountId, opts.mode, opts.limit ?? NESTED_LIST_LIMIT, JSON.stringify(ids)];
  let older = '';
  if (opts.after !== undefined) {
    if (opts.prefix) throw new Error('newestPerParent: after takes a plain table, not a join');
    bind.push(opts.after);
    older = ` AND (created_at, id) < (SELECT created_at, id FROM ${opts.from} WHERE id = $5 AND account_id = $1 AND mode = $2)`;
  }
  // As pagePerParent: on PostgreSQL each parent's newest rows alone, up to `limit`, from its index.
  if (db.dialect === 'postgres') {
    return db.select<R>(
      `SELECT newest.* FROM json_array_elements_text($4::json) AS parent(id)
         CROSS JOIN LATERAL (
           SELECT ${opts.columns} FROM ${opts.from}
            WHERE ${a}account_id = $1 AND ${a}mode = $2 AND ${parent} = parent.id${older}
            ORDER BY ${a}created_at DESC, ${a}id DESC LIMIT $3
         ) newest
        ORDER BY newest.created_at DESC, newest.id DESC`,
      bind,
    );
  }
  return db.select<R>(
    `SELECT * FROM (
       SELECT ${opts.columns}, ROW_NUMBER() OVER (PARTITION BY ${parent} ORDER BY ${a}created_at DESC, ${a}id DESC) AS rank_in_parent
         FROM ${opts.from} WHERE ${a}account_id = $1 AND ${a}mode = $2 AND ${db.inJsonList(parent, '$4')}${older}
     ) ranked WHERE rank_in_parent <= $3 ORDER BY created_at DESC, id DESC`,
    bind,
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
