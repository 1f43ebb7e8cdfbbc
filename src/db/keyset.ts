import type { Database } from './database';
import type { Filter } from './list';

/** A row's place in a list's default order (createdAt, then id, both descending): where the next page starts. */
export interface KeysetCursor {
  /** ISO 8601 with milliseconds, as the API object gives it. */
  createdAt: string;
  id: string;
}

export interface KeysetQuery<R, T> {
  table: string;
  columns: string;
  filter: Filter;
  /** The last row of the page before, or null for the first page. */
  after: KeysetCursor | null;
  limit: number;
  toApi: (row: R) => T;
}

/**
 * A page of a list in its default order, newest first with ties by id, read by keyset: the rows
 * strictly after `after` in that order, from the list's (account_id, mode[, filter], created_at,
 * id) index, however deep into the list. Unlike an offset, a row inserted meanwhile never shifts
 * the pages that follow: a page neither repeats nor skips a row that was there when the first
 * page was read. The filter is the caller's (the list's own conditions); it gains the keyset
 * condition here, so pass a fresh one per page.
 */
export async function keysetPage<R = Record<string, unknown>, T = R>(db: Database, query: KeysetQuery<R, T>): Promise<T[]> {
  const { filter, after } = query;
  if (after) {
    // A row value: one range condition on the index, on both dialects (SQLite compares the
    // stored UTC text, which sorts as the instants do).
    const at = new Date(after.createdAt);
    filter.raw((param) => (db.dialect === 'postgres'
      ? `(created_at, id) < (${param(at)}::timestamptz, ${param(after.id)})`
      : `(created_at, id) < (${param(at)}, ${param(after.id)})`));
  }
  const where = filter.sql ? ` WHERE ${filter.sql}` : '';
  const rows = await db.select<R>(
    `SELECT ${query.columns} FROM ${query.table}${where} ORDER BY created_at DESC, id DESC LIMIT $${filter.bind.length + 1}`,
    [...filter.bind, query.limit],
  );
  return rows.map((row) => query.toApi(row));
}
