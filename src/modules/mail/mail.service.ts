import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { randomBase62 } from '../../core/ids';
import { createRetrySchedule, type RetrySchedule } from '../../core/backoff';
import { LeasedOutboxLoop } from '../../core/leased-outbox-loop';
import { errorForLog, type Logger } from '../../logger';
import { MailSendError, createMailTransport, type MailMessage, type MailTransport } from './mail-transport';
import { MailStore, type ClaimedMail, type MailRecord } from './mail.store';
import type { MailAttachmentSource, MailStatus, OutgoingMail } from './mail.types';
import type { Metrics } from '../../observability/metrics';

export type { ClaimedMail, MailRecord } from './mail.store';

type AboutType = OutgoingMail['about']['type'];
type AttachmentType = MailAttachmentSource['type'];

/** Told of every status a mail takes, inside the transaction that writes it; a throw rolls that change back. */
export type MailStatusListener = (t: Transaction, about: OutgoingMail['about'], status: MailStatus) => Promise<void> | void;

/** Makes an attachment's bytes from what the outbox row holds, when the mail is sent. */
export type AttachmentRenderer<K extends AttachmentType = AttachmentType> = (source: Extract<MailAttachmentSource, { type: K }>) => Promise<Buffer>;

export interface MailSendResult {
  mailId: string;
  attempt: number;
  /** Where the row stands after this attempt. */
  status: MailStatus;
  nextAttemptAt: Date | null;
  error: string | null;
}

export interface MailServiceOptions {
  retry: RetrySchedule;
  /** How long a claim is owned before another worker may take the row again (database time; renewed while it is sent). */
  leaseMs: number;
  pollMs: number;
  /** Mails sent at once by this instance. */
  concurrency: number;
  /** Counts each send attempt when enabled. */
  metrics?: Metrics;
}

/** Retries 30 s, 1 min, 2 min, … (equal jitter), each wait at most 1 h, for 24 h after the first attempt; then the mail is `failed`. */
export const MAIL_RETRY = { baseMs: 30_000, maxMs: 60 * 60 * 1000, windowMs: 24 * 60 * 60 * 1000 };
export const DEFAULT_MAIL_POLL_MS = 1_000;
export const DEFAULT_MAIL_CONCURRENCY = 4;
const LEASE_MARGIN_MS = 30_000;
const MAX_ERROR = 255;

export interface MailOptions {
  /** Overrides of the retry schedule (tests shorten it). */
  retry?: { baseMs?: number; maxMs?: number; windowMs?: number };
  /** How often the worker looks for due mail besides being woken by a commit here; default 1 s. */
  pollMs?: number;
  concurrency?: number;
  /** Default: the SMTP timeout + 30 s, renewed every third of it while a mail is sent. */
  leaseMs?: number;
  /** Replaces the transport SMTP_URL / DATA_DIR choose (tests). */
  transport?: MailTransport;
}

/**
 * The mail outbox. `enqueue` writes a mail in the caller's transaction (the one that makes the
 * change the mail reports), so a mail exists exactly when its change committed; the worker
 * (`startWorker`) claims due mails under a lease, renders their attachments, sends them and
 * records the outcome: retried with backoff while the server is unreachable or answers "later",
 * `failed` once the retry window is spent or the server refuses the message for good. A process
 * that dies while sending leaves its lease to run out, and another instance (or the restarted one)
 * sends the mail again: at least once, normally once (the Message-ID is the same each time).
 */
export class MailService {
  private readonly store: MailStore;
  private readonly statusListeners = new Map<AboutType, Set<MailStatusListener>>();
  /** Keyed by type, so each renderer only ever gets sources of its own type. */
  private readonly renderers = new Map<AttachmentType, AttachmentRenderer>();
  private readonly wakeListeners = new Set<() => void>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly transport: MailTransport,
    private readonly from: string,
    readonly options: MailServiceOptions,
  ) {
    this.store = new MailStore(db);
  }

  /** `smtp` or `eml` (files under DATA_DIR/outbox). */
  get transportKind(): MailTransport['kind'] {
    return this.transport.kind;
  }

  /**
   * Queues `mail` in `t`, the transaction of the change it reports: status `queued`, due now.
   * The status listeners of its `about` hear `queued` in `t`; after commit the local worker is
   * woken. Every attachment's type must have a renderer, so a mail that could never be sent is
   * refused here, with the change, rather than failing a day later.
   */
  async enqueue(t: Transaction, ctx: RequestContext, mail: OutgoingMail): Promise<{ id: string }> {
    checkMail(mail);
    for (const a of mail.attachments) {
      if (!this.renderers.has(a.source.type)) throw new Error(`no renderer is registered for mail attachments of type ${a.source.type}`);
    }
    const id = `mail_${randomBase62(24)}`;
    // The outbox is timed on the services' clock, as the worker reads it (ctx's may be a test clock).
    await this.store.insert(t, { accountId: ctx.accountId, mode: ctx.mode }, id, mail, this.clock.now());
    await this.notify(t, mail.about, 'queued');
    t.afterCommit(() => this.wake());
    return { id };
  }

  /**
   * Registers `listener` for the mails about objects of `type` (the invoice module keeps
   * `emailStatus` with it). Returns the unregister.
   */
  onStatusChange(type: AboutType, listener: MailStatusListener): () => void {
    let set = this.statusListeners.get(type);
    if (!set) this.statusListeners.set(type, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Registers how attachments of `type` are rendered (the invoice module: `invoice_pdf` → its PDF). One per type. */
  registerAttachmentRenderer<K extends AttachmentType>(type: K, render: AttachmentRenderer<K>): void {
    if (this.renderers.has(type)) throw new Error(`a renderer for mail attachments of type ${type} is already registered`);
    this.renderers.set(type, render as unknown as AttachmentRenderer);
  }

  /** Drops sent and failed mail (with the documents they were rendered from) older than `keepDays`; queued mail stays. */
  async purgeOld(keepDays = 30): Promise<number> {
    return this.store.purge(new Date(this.clock.now().getTime() - keepDays * 86_400_000));
  }

  /** The mails about one object (its account and mode only), oldest first. */
  async mailsAbout(ctx: RequestContext, about: OutgoingMail['about']): Promise<MailRecord[]> {
    return this.store.listAbout({ accountId: ctx.accountId, mode: ctx.mode }, about);
  }

  /** Subscribes to "mail was queued here" (the local worker). */
  onWake(listener: () => void): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  wake(): void {
    for (const listener of this.wakeListeners) listener();
  }

  /** Leases up to `limit` due mails, oldest due first (SKIP LOCKED on PostgreSQL: instances share them). */
  async claim(limit: number): Promise<ClaimedMail[]> {
    return this.store.claim({ now: this.clock.now(), limit, leaseMs: this.options.leaseMs });
  }

  /** Extends the leases of claims still being sent (the worker calls it while they are in flight). */
  async renewLeases(tokens: string[]): Promise<number> {
    return this.store.renewLeases(tokens, this.options.leaseMs);
  }

  /** The queued mails at `now`: due (in flight included) and waiting for a retry (metrics, at scrape time). */
  async outboxDepth(now: Date): Promise<{ due: number; scheduled: number; oldestDueAt: Date | null }> {
    return this.store.depth(now);
  }

  /** Claims what is due now and sends it all, waiting for the outcomes (tests, one-shot runs). */
  async sendDue(limit = this.options.concurrency): Promise<MailSendResult[]> {
    const claimed = await this.claim(limit);
    return Promise.all(claimed.map((c) => this.send(c)));
  }

  /** Starts this instance's mail worker; stop() waits for the mails in flight. */
  startWorker(): LeasedOutboxLoop<ClaimedMail> {
    return new LeasedOutboxLoop<ClaimedMail>(
      { claim: (limit) => this.claim(limit), process: (c) => this.send(c), renewLeases: (tokens) => this.renewLeases(tokens) },
      this.logger,
      {
        pollMs: this.options.pollMs,
        concurrency: this.options.concurrency,
        renewLeasesMs: Math.max(Math.floor(this.options.leaseMs / 3), 1),
        wakeSources: [(wake) => this.onWake(wake)],
        messages: {
          claimFailed: 'mail claim failed',
          renewFailed: 'mail lease renewal failed',
          settleFailed: 'mail failed to settle; it is sent again when its lease ends',
        },
        describe: (c) => ({ mailId: c.id }),
      },
    );
  }

  /**
   * Sends one claimed mail and records the outcome, with its status change and the listeners', in
   * one transaction. Never throws for the server's failure; throws when the outcome could not be
   * recorded (the lease then runs out and the mail is sent again).
   */
  async send(c: ClaimedMail): Promise<MailSendResult> {
    let failure: MailSendError | null = null;
    try {
      await this.transport.send(await this.message(c));
    } catch (err) {
      failure = err instanceof MailSendError ? err : new MailSendError(`attachment could not be rendered: ${(err as Error).message ?? String(err)}`, false, { cause: err });
    }
    const now = this.clock.now();
    let status: MailStatus = 'sent';
    let nextAttemptAt: Date | null = null;
    if (failure) {
      nextAttemptAt = failure.permanent ? null : this.options.retry.nextAttemptAt(c.attempt, c.firstAttemptAt, now);
      status = nextAttemptAt ? 'queued' : 'failed';
    }
    const error = failure ? failure.message.slice(0, MAX_ERROR) : null;
    const log = { mailId: c.id, attempt: c.attempt };
    const record = () => this.db.transaction(async (t) => {
      if (await this.store.settle(t, c, { status, nextAttemptAt, lastError: error, now })) {
        if (status !== 'queued') await this.notify(t, c.about, status);
        return { status, nextAttemptAt };
      }
      // The claim is not ours any more: the lease ran out and another claim took the row (or settled it).
      if (!failure && (await this.store.recordLateSent(t, c.id, now))) {
        // The server has the mail: recording it stops any later attempt from sending it again.
        this.logger.warn(log, 'mail sent after its claim was lost; recorded as sent');
        await this.notify(t, c.about, 'sent');
      } else {
        this.logger.warn(log, 'mail attempt settled after its claim was lost');
      }
      return { status: (await this.store.status(t, c.id)) ?? status, nextAttemptAt: null };
    });
    let settled: { status: MailStatus; nextAttemptAt: Date | null };
    try {
      settled = await record();
    } catch (err) {
      // Nothing was sent: the lease runs out and the mail is tried again.
      if (failure) throw err;
      // The server has the mail: a listener (or the write beside it) failing must never send it
      // again. The mail is recorded sent without its listeners, and the failure logged.
      this.logger.error({ ...log, about: c.about, err: errorForLog(err) }, 'mail sent but its status listeners failed; recorded as sent without them');
      settled = await this.db.transaction(async (t) => {
        if (await this.store.settle(t, c, { status, nextAttemptAt, lastError: error, now })) return { status, nextAttemptAt };
        if (await this.store.recordLateSent(t, c.id, now)) return { status: 'sent' as MailStatus, nextAttemptAt: null };
        return { status: (await this.store.status(t, c.id)) ?? status, nextAttemptAt: null };
      });
    }
    if (failure) {
      this.logger.warn(
        { ...log, error, permanent: failure.permanent, status: settled.status, nextAttemptAt: settled.nextAttemptAt },
        'mail attempt failed',
      );
    }
    this.options.metrics?.countMailSend(settled.status === 'queued' ? 'retrying' : settled.status);
    return { mailId: c.id, attempt: c.attempt, status: settled.status, nextAttemptAt: settled.nextAttemptAt, error };
  }

  private async message(c: ClaimedMail): Promise<MailMessage> {
    const attachments = await Promise.all(c.attachments.map(async (a) => {
      const render = this.renderers.get(a.source.type);
      if (!render) throw new Error(`no renderer is registered for mail attachments of type ${a.source.type}`);
      return { filename: a.filename, contentType: a.contentType, content: await render(a.source) };
    }));
    return { id: c.id, from: this.from, to: c.to, subject: c.subject, text: c.text, html: c.html, date: c.createdAt, attachments };
  }

  private async notify(t: Transaction, about: OutgoingMail['about'], status: MailStatus): Promise<void> {
    for (const listener of this.statusListeners.get(about.type) ?? []) await listener(t, about, status);
  }

  close(): void {
    this.transport.close();
  }
}

/** A mail the outbox can send: one recipient address, header text on one line. */
function checkMail(mail: OutgoingMail): void {
  if (!/^[^\s<>@]+@[^\s<>@]+$/.test(mail.to) || mail.to.length > 320) throw new Error('a queued mail needs one recipient address');
  if (/[\r\n]/.test(mail.subject)) throw new Error('a mail subject is one line');
  for (const a of mail.attachments) if (/[\r\n]/.test(a.filename) || /[\r\n]/.test(a.contentType)) throw new Error('attachment names and types are one line');
}

/** Builds the mail service from the configuration (SMTP_URL, MAIL_FROM, SMTP_TIMEOUT_MS) and test overrides. */
export function createMailService(deps: {
  db: Database;
  clock: Clock;
  logger: Logger;
  config: { smtpUrl?: string; smtpTimeoutMs: number; mailFrom: string; dataDir: string };
  options?: MailOptions;
  metrics?: Metrics;
}): MailService {
  const options = deps.options ?? {};
  const retry = createRetrySchedule({
    baseMs: options.retry?.baseMs ?? MAIL_RETRY.baseMs,
    maxMs: options.retry?.maxMs ?? MAIL_RETRY.maxMs,
    windowMs: options.retry?.windowMs ?? MAIL_RETRY.windowMs,
  });
  return new MailService(deps.db, deps.clock, deps.logger, options.transport ?? createMailTransport(deps.config), deps.config.mailFrom, {
    retry,
    leaseMs: options.leaseMs ?? deps.config.smtpTimeoutMs + LEASE_MARGIN_MS,
    pollMs: options.pollMs ?? DEFAULT_MAIL_POLL_MS,
    concurrency: options.concurrency ?? DEFAULT_MAIL_CONCURRENCY,
    metrics: deps.metrics,
  });
}
