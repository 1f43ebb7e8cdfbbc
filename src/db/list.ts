import { Op, fn, col, where as sqlWhere, type WhereOptions } from 'sequelize';
import type { ModelStatic, Model } from 'sequelize';
import type { ListParams, Page } from '../core/pagination';

/** Escapes LIKE wildcards in user text; used with ESCAPE '\'. */
export function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Case-insensitive substring match on any of the given columns. */
export function searchAny(columns: string[], text: string) {
  const pattern = likePattern(text);
  return {
    [Op.or]: columns.map((c) => sqlWhere(fn('lower', col(c)), { [Op.like]: pattern })),
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
  const name = (err as { name?: string })?.name;
  return name === 'SequelizeUniqueConstraintError';
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
  const [rows, [count]] = await Promise.all([
    db.select<R>(
      `SELECT ${opts.columns} FROM ${opts.table} WHERE ${where} ORDER BY ${opts.sortColumn} ${dir}, id ${dir} LIMIT ${opts.params.pageSize} OFFSET ${offset}`,
      opts.filter.bind,
    ),
    db.select<{ total: number }>(`SELECT COUNT(*) AS total FROM ${opts.table} WHERE ${where}`, opts.filter.bind),
  ]);
  return { rows, total: Number(count.total) };
}
