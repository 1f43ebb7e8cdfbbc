import { z } from 'zod';

/** Query strings arrive as strings (REST) or numbers (GraphQL); both parse the same way. */
const intFromQuery = (name: string, min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v),
    z
      .number({ error: `${name} must be an integer` })
      .int({ error: `${name} must be an integer` })
      .min(min, { error: `${name} must be between ${min} and ${max}` })
      .max(max, { error: `${name} must be between ${min} and ${max}` }),
  );

/** The paging bounds of every list (API.md): pages from 1, 20 per page unless asked, at most 100. */
export const PAGE_MAX = 1_000_000;
export const PAGE_SIZE_DEFAULT = 20;
export const PAGE_SIZE_MAX = 100;

export interface ListParams<F extends string = string> {
  page: number;
  pageSize: number;
  sortField: F;
  sortDirection: 'asc' | 'desc';
}

/**
 * One strict schema per list operation: paging, sorting on the allowed fields, and the
 * resource's own filters. Unknown query parameters are refused.
 */
export function listSchema<F extends readonly [string, ...string[]], S extends z.ZodRawShape>(
  sortFields: F,
  filters: S,
) {
  return z
    .object({
      page: intFromQuery('page', 1, PAGE_MAX).default(1),
      pageSize: intFromQuery('pageSize', 1, PAGE_SIZE_MAX).default(PAGE_SIZE_DEFAULT),
      sortField: z.enum(sortFields, { error: `sortField must be one of ${sortFields.join(', ')}` }).default(
        sortFields[0] as F[number] as never,
      ),
      sortDirection: z.enum(['asc', 'desc'], { error: 'sortDirection must be asc or desc' }).default('desc'),
      ...filters,
    })
    .strict();
}

export const searchSchema = z.string({ error: 'search must be a string' }).max(200, { error: 'search must be at most 200 characters' }).optional();

export interface Page<T, Total extends number | null = number> {
  data: T[];
  total: Total;
  page: number;
  pageSize: number;
}

/** How a list is read, besides its query. */
export interface ListOptions {
  /**
   * false: leave the `COUNT(*)` out and answer `total: null`. GraphQL asks it only when `total`
   * is selected; REST always counts (its `meta.total` is always there).
   */
  countTotal?: boolean;
}

/** A list read without options, or with `countTotal: true`: counted. */
export type Counted = { countTotal?: true };

/** The page a list read with options `O` answers: `total` is a number unless `O` may skip the count. */
export type PageFor<T, O extends ListOptions> = Page<T, O extends Counted ? number : number | null>;
