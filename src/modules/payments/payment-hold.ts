import type { Transaction } from 'sequelize';
import type { CtePart } from '../../db/statement';
import type { EventPayload } from '../events/event.service';
import type { Payment } from './payment.types';

/**
 * Another module's row a payment pays for and holds while it runs: a checkout session, claimed by
 * its pay and completed by the charge's success. The claim is written with the payment's pending
 * row and the completion (with its event) with the payment's settling write, in the same
 * statement on PostgreSQL (the payments' group commit) and the same transaction on SQLite, so a
 * pay adds no round trip of its own and the held row's state change commits with its payment's.
 */
export interface PaymentHold {
  /** The held row's id. */
  id: string;
  /** Names this pay's claim: the row is finished only while the claim is still this one. */
  token: string;
  /** How long the claim lasts, from the database's now; the payment's row holds it after that. */
  leaseMs: number;
  /** The business time the claim is stamped with and checked against (the row's expiry). */
  now: Date;
  /** The held row as the payment's success completes it, as its event carries it. */
  completion(done: Payment): EventPayload;
}

/** A hold's claim as its store writes it. */
export interface HoldClaim {
  paymentId: string;
  holdId: string;
  token: string;
  leaseMs: number;
  accountId: string;
  mode: string;
  now: Date;
}

/** A hold's finish as its store writes it: `complete` with the payment that succeeded, or `release` (the charge failed). */
export interface HoldFinish {
  holdId: string;
  token: string;
  paymentId: string;
  customerId: string | null;
  now: Date;
}

/**
 * The store of held rows (CheckoutStore), handing out its writes as parts of the payments'
 * statements (PostgreSQL) and running them in the payments' transactions (SQLite). Relations
 * passed as `source` have the columns named on each method.
 */
export interface PaymentHoldStore {
  /**
   * Claims the held row of each row of `source` (`payment_id`, `hold_id`, `hold_token`,
   * `hold_lease_ms`, `account_id`, `mode`, `hold_now`; at most one row per `hold_id`); returns
   * `payment_id` of each row claimed.
   */
  claimPart(name: string, source: string): CtePart;
  /** Completes the held row of each row of `source` (`id`: the held row's, `payment_id`, `hold_token`, `customer_id`, `hold_now`); returns `id` of each completed. */
  completePart(name: string, source: string): CtePart;
  /** Releases the claim of each row of `source` (`id`, `hold_token`). */
  releasePart(name: string, source: string): CtePart;
  claimIn(t: Transaction, claim: HoldClaim): Promise<boolean>;
  completeIn(t: Transaction, finish: HoldFinish): Promise<boolean>;
  releaseIn(t: Transaction, finish: HoldFinish): Promise<void>;
}

/** The hold could not be claimed (the row is not payable, or another pay holds it): nothing was written. */
export class HoldRefused extends Error {
  constructor(readonly holdId: string) {
    super(`hold ${holdId} refused`);
    this.name = 'HoldRefused';
  }
}
