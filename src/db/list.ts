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
