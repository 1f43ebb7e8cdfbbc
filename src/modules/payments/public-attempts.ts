import type { Transaction } from 'sequelize';
import type { AccountSettings } from '../accounts/account.service';
import type { Database } from '../../db/database';
import { PublicAttemptStore } from './public-attempt.store';
import type { Clock } from '../../core/clock';
import { systemContext, type Mode } from '../../core/context';
import { DomainError, isDomainError } from '../../core/errors';
import { randomBase62 } from '../../core/ids';
import type { Logger } from '../../logger';
import { errorForLog } from '../../logger';
import type { EventService } from '../events/event.service';
import type { Metrics } from '../../observability/metrics';

/** What a public pay acts on: a checkout session is capped in all, a link or invoice page per client address. */
export interface AttemptTarget {
  kind: 'checkout_session' | 'payment_link' | 'invoice';
  id: string;
  accountId: string;
  mode: Mode;
}

/** The caps of API.md §11. */
export interface AttemptCaps {
  /** Failed pays a checkout session takes in all. */
  perSession: number;
  /** Failed pays of one link or invoice page per client address in `windowMs`. */
  perAddress: number;
  /** The rolling window of the per-address and per-account caps. */
  windowMs: number;
}

const DEFAULT_ATTEMPT_CAPS: AttemptCaps = { perSession: 5, perAddress: 5, windowMs: 60 * 60 * 1000 };

/** Attempt rows older than this are past every window (a session lives at most 24 hours). */
const RETENTION_MS = 25 * 60 * 60 * 1000;

/** What the per-account cap's event carries: the account as `GET /v1/account` answers it. */
export interface AttemptAccounts {
  eventObject(accountId: string, mode: Mode, transaction?: Transaction): Promise<AccountSettings>;
}

/** Which cap refused, when a place frees up (null: never), its size, and whether attempts still running filled it. */
type Refusal = { cap: 'account' | 'target'; retryMs: number | null; limit: number; running: boolean };

const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

/**
 * The caps on failed public pays (card testing, OWASP OAT-001), shared by every instance through
 * the database. An attempt is written (`running`) before any gateway is asked, and only then
 * counts the attempts it sees, itself included: of attempts made at once, on one instance or
 * several, each one let through has seen every one let through before it, so no more than a cap
 * get through whatever the timing (at worst a burst is refused a little early). A refused attempt,
 * or one that succeeds or is refused before it reaches a gateway, is deleted again; a decline
 * stays as `failed`. Every public pay (checkout session, payment link, invoice page) runs through
 * `run`.
 */
export class PublicAttempts {
  private readonly store: PublicAttemptStore;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly accounts: AttemptAccounts,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Counts refusals per cap and page when enabled. */
    private readonly metrics?: Metrics,
    private readonly caps: AttemptCaps = DEFAULT_ATTEMPT_CAPS,
  ) {
    this.store = new PublicAttemptStore(db);
  }

  /**
   * Runs one pay attempt under the caps; refused (429 `too_many_attempts`), `pay` is never called.
   * A `customer_exists` refusal counts as a failed attempt too: it answers whether an e-mail is a
   * customer's, which must not be asked without limit.
   */
  async run<R extends { status: 'succeeded' | 'failed' | 'processing' | 'requires_action' }>(target: AttemptTarget, clientAddress: string, pay: () => Promise<R>): Promise<R> {
    const id = await this.reserve(target, clientAddress);
    let outcome: 'failed' | 'running' | 'released' = 'released';
    try {
      const result = await pay();
      // A decline counts; an outcome not known yet stays counted as running (it may be a
      // decline). A 3-D Secure challenge is released: nothing is told about the card before the
      // issuer authenticates the customer, and a running attempt would stay counted after the
      // challenge ended (its answer comes through the return page, not this pay).
      outcome = result.status === 'failed' ? 'failed' : result.status === 'processing' ? 'running' : 'released';
      return result;
    } catch (err) {
      outcome = isDomainError(err) && err.code === 'customer_exists' ? 'failed' : 'released';
      throw err;
    } finally {
      await this.settle(id, outcome);
    }
  }

  /** Whether a checkout session has no failed attempt left (its page says so instead of showing the form). */
  async sessionExhausted(sessionId: string): Promise<boolean> {
    return (await this.store.failedFor(sessionId)) >= this.caps.perSession;
  }

  /** Deletes attempts past every window (the job); returns how many. */
  async purge(now: Date): Promise<number> {
    return this.store.purgeBefore(new Date(now.getTime() - RETENTION_MS));
  }

  private async reserve(target: AttemptTarget, clientAddress: string): Promise<string> {
    const id = `ppa_${randomBase62(24)}`;
    const now = this.clock.now();
    const since = new Date(now.getTime() - this.caps.windowMs);
    const session = target.kind === 'checkout_session';
    const cap = session ? this.caps.perSession : this.caps.perAddress;
    const accountScope = { cap: 'account' as const, accountId: target.accountId, mode: target.mode, since };
    const targetScope = { cap: 'target' as const, targetId: target.id, clientAddress: session ? null : clientAddress, since: session ? null : since };
    await this.store.insertRunning({ id, accountId: target.accountId, mode: target.mode, targetId: target.id, clientAddress, createdAt: now });
    const seen = await this.store.counts(accountScope, targetScope);
    let refusal: Refusal | null = null;
    if (seen.account > seen.accountLimit) {
      const running = seen.accountFailed < seen.accountLimit;
      const frees = await this.store.capthNewest(accountScope, seen.accountLimit, !running);
      refusal = { cap: 'account', retryMs: frees ? frees.getTime() - now.getTime() + this.caps.windowMs : null, limit: seen.accountLimit, running };
      if (!running) await this.recordExceeded(target, since).catch((err: unknown) => this.logger.error({ err: errorForLog(err) }, 'the public declines event could not be written'));
    } else if (seen.target > cap) {
      const running = seen.targetFailed < cap;
      const frees = session && !running ? null : await this.store.capthNewest(targetScope, cap, !running);
      refusal = { cap: 'target', retryMs: frees ? frees.getTime() - now.getTime() + this.caps.windowMs : null, limit: cap, running };
    }
    if (!refusal) return id;
    this.metrics?.countPublicPayRefusal(refusal.cap === 'account' ? 'account' : session ? 'session' : 'address', target.kind);
    await this.settle(id, 'released');
    throw tooManyAttempts(target, refusal);
  }

  /** The account's event, once per rolling window in which its cap was reached (serialised per account and mode). */
  private async recordExceeded(target: AttemptTarget, since: Date): Promise<void> {
    const now = this.clock.now();
    const written = await this.db.transaction(async (t) => {
      await this.store.lockAccountMode(t, target.accountId, target.mode);
      if (await this.events.recordedSince(target, 'account.public_declines_exceeded', since, t)) return false;
      const ctx = systemContext(target.accountId, target.mode, now, 'public-declines');
      await this.events.record(ctx, t, 'account.public_declines_exceeded', await this.accounts.eventObject(target.accountId, target.mode, t));
      return true;
    });
    if (written) this.logger.warn({ accountId: target.accountId, mode: target.mode }, 'public pays refused: too many failed attempts in the last hour');
  }

  /**
   * An attempt's outcome: a decline marks it failed, a success (or a refusal before any gateway)
   * deletes it, an unknown outcome leaves it running. A failure to write it leaves it counted
   * (logged, not thrown: the payer's answer is what happened to the card).
   */
  private async settle(id: string, outcome: 'failed' | 'running' | 'released'): Promise<void> {
    if (outcome === 'running') return;
    const write = outcome === 'failed' ? this.store.markFailed(id) : this.store.remove(id);
    await write.catch((err: unknown) => {
      this.logger.error({ err: errorForLog(err) }, 'a public pay attempt could not be settled');
    });
  }
}

function tooManyAttempts(target: AttemptTarget, refusal: Refusal): DomainError {
  if (refusal.running) {
    return new DomainError('too_many_attempts', 'Too many payment attempts at once; wait for the result of the one being processed, then try again');
  }
  const retry = refusal.retryMs === null ? '' : `; try again in ${minutes(refusal.retryMs)} minute${minutes(refusal.retryMs) === 1 ? '' : 's'}`;
  if (refusal.cap === 'account') {
    return new DomainError('too_many_attempts', `Too many failed payments on this merchant's pages in the last hour: payments are paused for now${retry}`);
  }
  if (target.kind === 'checkout_session') {
    return new DomainError('too_many_attempts', `This checkout had ${refusal.limit} failed payment attempts and can no longer be paid; ask the merchant for a new one`);
  }
  return new DomainError('too_many_attempts', `Too many failed payment attempts from your connection${retry}`);
}
