import { errorForLog, type Logger } from '../../logger';
import type { LeasedTable, LeaseStore } from './lease.store';

/** How long recovery leaves an operation it could not settle before asking again. */
const PENDING_RECOVERY_AFTER_MS = 2 * 60_000;

/**
 * A gateway's "no such charge" is taken as final only for payments pending at least this long
 * (unless the gateway says its answer is definitive): search indexes (Stripe's) can trail a
 * charge by a minute or more, longer during incidents. Measured on the database's clock (see
 * LeaseStore), as every age recovery goes by.
 */
export const NOT_FOUND_FINAL_AFTER_MS = 15 * 60_000;

/**
 * A payment whose charge outcome no gateway could tell for this long (pending since) is
 * marked `requires_review` and no longer asked about: someone must check it at the gateway.
 * Past Stripe's 24 h idempotency window a repeat of the charge is no longer safe either.
 */
export const UNKNOWN_OUTCOME_REVIEW_AFTER_MS = 24 * 3600_000;

/**
 * The recovery loop payments and refunds share: each pending row whose lease ran out is claimed
 * for PENDING_RECOVERY_AFTER_MS (so one instance asks its gateway), then `settle` asks and records
 * what it learns; true when it settled the row. A failure is logged with the row's id and retried
 * at the next claim.
 */
export async function recoverRows<R extends object>(
  leases: LeaseStore,
  logger: Logger,
  what: { table: LeasedTable; idField: 'paymentId' | 'refundId' },
  rows: R[],
  settle: (row: R) => Promise<boolean>,
): Promise<number> {
  let settled = 0;
  for (const row of rows) {
    const id = (row as { id?: unknown }).id as string;
    if (!(await leases.claimPastLease(what.table, id, PENDING_RECOVERY_AFTER_MS))) continue;
    try {
      if (await settle(row)) settled++;
    } catch (err) {
      logger.error({ [what.idField]: id, err: errorForLog(err) }, `${what.table === 'payments' ? 'payment' : 'refund'} recovery failed; will retry`);
    }
  }
  return settled;
}
