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

/** The most values one several-valued filter takes (`status=a,b,…`, `currency=…`). */
export const FILTER_VALUES_MAX = 20;

/**
 * A filter taking one or more values (API.md §2): comma-separated in a REST query
 * (`status=succeeded,refunded`), a list in GraphQL (where a single value is coerced to a list of
 * one). Each value is checked by `item`; any refusal names the filter itself (param `name`), never
 * one of its values. The output is the values without repeats, in the order given.
 */
export function severalFilter<T>(name: string, item: z.ZodType<T>, doc: { description: string; pattern?: string; itemLabel: string }) {
  const message = `${name} must be ${doc.itemLabel}, or several separated by commas`;
  // From unknown input, so the document describes what a REST client sends (one string, below)
  // rather than this schema's inner steps.
  return z
    .unknown()
    .transform((given, ctx) => {
      const values: unknown = typeof given === 'string' ? given.split(',') : given;
      if (!Array.isArray(values) || values.length === 0) {
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      }
      if (values.length > FILTER_VALUES_MAX) {
        ctx.addIssue({ code: 'custom', message: `${name} takes at most ${FILTER_VALUES_MAX} values` });
        return z.NEVER;
      }
      const out: T[] = [];
      for (const value of values) {
        const parsed = item.safeParse(value);
        if (!parsed.success) {
          ctx.addIssue({ code: 'custom', message: `${message}: '${String(value).slice(0, 40)}' is not one` });
          return z.NEVER;
        }
        if (!out.includes(parsed.data)) out.push(parsed.data);
      }
      return out;
    })
    .optional()
    // What a REST client sends: one string (GraphQL's list argument is described by its own type).
    .meta({ type: 'string', description: doc.description, ...(doc.pattern ? { pattern: doc.pattern } : {}) } as Record<string, unknown>);
}

/**
 * A filter on a closed set of values (a status, a mode): one or several of `values`
 * (`status=succeeded,refunded`; a list of the enum in GraphQL). 400 `invalid_parameter` with
 * param `name` for anything outside the set.
 */
export function closedSetFilter<V extends string>(name: string, values: readonly [V, ...V[]], description?: string) {
  const alternatives = values.join('|');
  return severalFilter<V>(name, z.enum(values), {
    itemLabel: `one of ${values.join(', ')}`,
    description: `${description ?? `Only objects whose ${name} is one of these`}: one or more of ${values.join(', ')}, comma-separated.`,
    pattern: `^(${alternatives})(,(${alternatives}))*$`,
  });
}

/**
 * `metadata[key]=value` (REST: rest/route.ts gathers the bracketed keys into one object; GraphQL:
 * a JSON object): only objects whose metadata holds every pair given (AND). Keys follow the rules
 * of metadata keys (1 to 40 characters), values those of metadata values; a refused key is
 * named as `metadata.<key>` (REST answers `metadata[<key>]`).
 */
export const metadataFilter = z
  .record(z.string(), z.string({ error: 'metadata filter values must be strings' }).max(500, { error: 'metadata values are at most 500 characters' }), {
    error: 'metadata must be given as metadata[key]=value',
  })
  .superRefine((value, ctx) => {
    const keys = Object.keys(value);
    if (keys.length > FILTER_VALUES_MAX) ctx.addIssue({ code: 'custom', message: `at most ${FILTER_VALUES_MAX} metadata keys in one filter` });
    for (const key of keys) {
      if (key.length === 0 || key.length > 40) ctx.addIssue({ code: 'custom', message: 'metadata keys must be 1 to 40 characters', path: [key] });
    }
  })
  .optional()
  .meta({ description: 'Only objects whose metadata holds every key and value given: `metadata[plan]=gold&metadata[region]=eu`.' });

/** An id filter (`customerId`, `invoiceId`, …): an object id, at most 64 characters. */
export function idFilter(description: string) {
  return z.string({ error: 'must be an object id' }).max(64, { error: 'must be at most 64 characters' }).optional().meta({ description });
}
