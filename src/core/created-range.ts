import { z } from 'zod';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

/** The instant an ISO 8601 date (UTC midnight) or instant with its offset stands for; null for anything else, a 31 February included. */
export function parseIsoInstant(text: string): Date | null {
  const m = DATE.exec(text) ?? INSTANT.exec(text);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // Date.parse rolls 2026-02-31 over into March: the calendar day must exist as written.
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (calendar.getUTCFullYear() !== year || calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return null;
  const at = DATE.test(text) ? calendar : new Date(text);
  return Number.isNaN(at.getTime()) ? null : at;
}

/**
 * A list's bound on `createdAt`, by name: an ISO 8601 date (`2026-01-31`, UTC midnight) or
 * instant with its offset (`2026-01-31T09:30:00Z`); GraphQL's DateTime arrives as a Date. Anything
 * else is a 400 `invalid_parameter` naming the parameter.
 */
export function createdBound(name: string) {
  const message = `${name} must be an ISO 8601 date or instant such as 2026-01-31 or 2026-01-31T09:30:00Z`;
  return z.preprocess(
    (v) => (v instanceof Date && !Number.isNaN(v.getTime()) ? v.toISOString() : v),
    z.string({ error: message }).max(40, { error: message }).transform((text, ctx) => {
      const at = parseIsoInstant(text);
      if (at === null) {
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      }
      return at;
    }),
  );
}

/** `createdAfter` and `createdBefore`: only objects created strictly after, and strictly before, these instants. */
export const createdRangeFilters = {
  createdAfter: createdBound('createdAfter').optional().meta({ description: 'Only objects created strictly after this ISO 8601 date (UTC midnight) or instant.' }),
  createdBefore: createdBound('createdBefore').optional().meta({ description: 'Only objects created strictly before this ISO 8601 date (UTC midnight) or instant.' }),
};
