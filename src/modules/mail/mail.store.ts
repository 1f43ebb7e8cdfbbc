import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readJson, readTime } from '../../db/database';
import { LeasedOutbox } from '../../db/leased-outbox';
import type { MailAttachmentSource, MailStatus, OutgoingMail } from './mail.types';

type Scope = { accountId: string; mode: string };

/** An attachment as the row keeps it: what it is rendered from when the mail is sent. */
export interface StoredAttachment {
  filename: string;
  contentType: string;
  source: MailAttachmentSource;
}

/** A mail this worker has leased, with everything it needs to send it. */
export interface ClaimedMail {
  id: string;
  accountId: string;
  mode: string;
  about: OutgoingMail['about'];
  to: string;
  subject: string;
  text: string;
  html: string;
  attachments: StoredAttachment[];
  /** The number of this attempt (already counted on the row). */
  attempt: number;
  firstAttemptAt: Date;
  createdAt: Date;
  lockToken: string;
}

/** A mail as `MailService.mailsAbout` lists it. */
export interface MailRecord {
  id: string;
  status: MailStatus;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: string | null;
  sentAt: string | null;
  createdAt: string;
}

const CLAIMED_COLUMNS = 'id, account_id, mode, about_type, about_id, to_address, subject, text_body, html_body, attachments, attempts, first_attempt_at, created_at';

/** Rows each purge transaction deletes at most. */
const PURGE_BATCH = 1000;

const OUTBOX = { table: 'mail_outbox', owed: 'queued', columns: CLAIMED_COLUMNS };

const INSERT = `INSERT INTO mail_outbox
    (id, account_id, mode, about_type, about_id, to_address, subject, text_body, html_body, attachments, status, attempts, next_attempt_at, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'queued', 0, $11, $11, $11)`;

/** A send that succeeded after its claim was lost or given up: the recipient has the mail, so no later attempt sends it again. */
const LATE_SENT = `UPDATE mail_outbox SET status = 'sent', sent_at = $1, last_error = NULL, locked_until = NULL, lock_token = NULL, updated_at = $1
  WHERE id = $2 AND status <> 'sent'`;

/**
 * Where the mail module reads and writes `mail_outbox`. The claim, renewal and settling are the
 * leased outbox's shared statements (LeasedOutbox); times are the caller's Clock, leases the
 * database's.
 */
export class MailStore {
  private readonly outbox: LeasedOutbox;

  constructor(private readonly db: Database) {
    this.outbox = new LeasedOutbox(db, OUTBOX);
  }

  async insert(t: Transaction, scope: Scope, id: string, mail: OutgoingMail, now: Date): Promise<void> {
    const attachments: StoredAttachment[] = mail.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, source: a.source }));
    await this.db.execute(INSERT, [
      id, scope.accountId, scope.mode, mail.about.type, mail.about.id, mail.to, mail.subject, mail.text, mail.html, JSON.stringify(attachments), now,
    ], t);
  }

  async claim(opts: { now: Date; limit: number; leaseMs: number }): Promise<ClaimedMail[]> {
    const { lockToken, rows } = await this.outbox.claim(opts);
    return rows.map((r) => claimedMail(r, lockToken));
  }

  async renewLeases(tokens: readonly string[], leaseMs: number): Promise<number> {
    return this.outbox.renew(tokens, leaseMs);
  }

  /** The queued mails, due and waiting for a retry (metrics). */
  async depth(now: Date): Promise<{ due: number; scheduled: number; oldestDueAt: Date | null }> {
    return this.outbox.depth(now);
  }

  /** Writes an attempt's outcome while the claim is still ours; false when it was not. */
  async settle(t: Transaction, c: ClaimedMail, w: { status: MailStatus; nextAttemptAt: Date | null; lastError: string | null; now: Date }): Promise<boolean> {
    return this.outbox.settle(t, c.id, c.lockToken, { ...w, set: { sent_at: w.status === 'sent' ? w.now : null } });
  }

  /** True when this changed the row (it was not recorded as sent yet). */
  async recordLateSent(t: Transaction, id: string, now: Date): Promise<boolean> {
    return (await this.db.execute(LATE_SENT, [now, id], t)) === 1;
  }

  async status(t: Transaction, id: string): Promise<MailStatus | null> {
    const [row] = await this.db.select<{ status: MailStatus }>('SELECT status FROM mail_outbox WHERE id = $1', [id], t);
    return row ? row.status : null;
  }

  /** Deletes sent and failed mail last changed before `cutoff`, in small batches (queued mail stays). */
  async purge(cutoff: Date): Promise<number> {
    let total = 0;
    for (;;) {
      // Each batch its own transaction: other writers (SQLite's single lock) keep moving.
      const n = await this.db.transaction((t) => this.db.execute(
        `DELETE FROM mail_outbox WHERE id IN (SELECT id FROM mail_outbox WHERE status IN ('sent', 'failed') AND updated_at < $1 LIMIT ${PURGE_BATCH})`,
        [cutoff],
        t,
      ));
      total += n;
      if (n < PURGE_BATCH) return total;
    }
  }

  /** The mails about one object of the scope, oldest first. */
  async listAbout(scope: Scope, about: OutgoingMail['about']): Promise<MailRecord[]> {
    const rows = await this.db.select<Record<string, unknown>>(
      `SELECT id, status, attempts, last_error, next_attempt_at, sent_at, created_at FROM mail_outbox
        WHERE account_id = $1 AND mode = $2 AND about_type = $3 AND about_id = $4 ORDER BY created_at, id`,
      [scope.accountId, scope.mode, about.type, about.id],
    );
    return rows.map((r) => ({
      id: r.id as string,
      status: r.status as MailStatus,
      attempts: Number(r.attempts),
      lastError: (r.last_error as string | null) ?? null,
      nextAttemptAt: r.status === 'queued' ? isoTime(r.next_attempt_at) : null,
      sentAt: isoTime(r.sent_at),
      createdAt: isoTime(r.created_at) as string,
    }));
  }
}

function claimedMail(r: Record<string, unknown>, lockToken: string): ClaimedMail {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    mode: r.mode as string,
    about: { type: r.about_type as OutgoingMail['about']['type'], id: r.about_id as string },
    to: r.to_address as string,
    subject: r.subject as string,
    text: r.text_body as string,
    html: r.html_body as string,
    attachments: readJson<StoredAttachment[]>(r.attachments, []),
    attempt: Number(r.attempts),
    firstAttemptAt: readTime(r.first_attempt_at) as Date,
    createdAt: readTime(r.created_at) as Date,
    lockToken,
  };
}
