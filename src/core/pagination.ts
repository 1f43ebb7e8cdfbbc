import { z } from 'zod';
import { createdBound, createdRangeFilters } from './created-range';

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
  /** The page after this object in the list's order (keyset: stable under concurrent inserts). */
  startingAfter?: string;
  /** The page before this object in the list's order. */
  endingBefore?: string;
  /** Only objects created strictly after / before these instants. */
  createdAfter?: Date;
  createdBefore?: Date;
  /** Only objects changed strictly after this instant (lists of objects that change). */
  updatedAfter?: Date;
}

const cursorSchema = (name: string) => z
  .string({ error: `${name} must be an object id` })
  .min(1, { error: `${name} must be an object id` })
  .max(64, { error: `${name} must be an object id` })
  .regex(/^[A-Za-z0-9_]+$/, { error: `${name} must be an object id` })
  .optional();

/** What every list takes besides its own filters: the created range and the cursors (API.md §2). */
const commonListFilters = {
  ...createdRangeFilters,
  startingAfter: cursorSchema('startingAfter').meta({ description: 'An object id: the page after it in the list\'s order (not with page > 1).' }),
  endingBefore: cursorSchema('endingBefore').meta({ description: 'An object id: the page before it in the list\'s order (not with page > 1 or startingAfter).' }),
};

/** `updatedAfter`, for the lists of objects that change after they are made. */
export const updatedAfterFilter = {
  updatedAfter: createdBound('updatedAfter').optional().meta({ description: 'Only objects changed strictly after this ISO 8601 date (UTC midnight) or instant.' }),
};

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
      ...commonListFilters,
      ...filters,
    })
    .strict()
    // Zod 4 keeps a refined object an object: `.shape` still reads the list's sort fields.
    .superRefine((v, ctx) => {
      const cursors = v as { startingAfter?: string; endingBefore?: string; page: number };
      if (cursors.startingAfter !== undefined && cursors.endingBefore !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['endingBefore'], message: 'endingBefore cannot be combined with startingAfter: give one cursor' });
      } else if ((cursors.startingAfter !== undefined || cursors.endingBefore !== undefined) && cursors.page > 1) {
        ctx.addIssue({ code: 'custom', path: ['page'], message: 'page cannot be combined with startingAfter or endingBefore: page with one or the other' });
      }
    });
}

export const searchSchema = z.string({ error: 'search must be a string' }).max(200, { error: 'search must be at most 200 characters' }).optional();

export interface Page<T, Total extends number | null = number> {
  data: T[];
  total: Total;
  /** The page number; null when the page was read by a cursor. */
  page: number | null;
  pageSize: number;
  /**
   * Whether more objects follow this page in the direction it was read: after it, or before it
   * when read with `endingBefore`.
   */
  hasMore: boolean;
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
