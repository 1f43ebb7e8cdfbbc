import fs from 'node:fs';
import path from 'node:path';
import type { Transaction } from 'sequelize';
import { Database, readTime } from '../../src/db/database';
import type { RequestContext } from '../../src/core/context';
import { createLogger } from '../../src/logger';
import { createMailService, type MailOptions, type MailService } from '../../src/modules/mail/mail.service';
import type { MailStatus, OutgoingMail } from '../../src/modules/mail/mail.types';
import { EmlFileMailTransport } from '../../src/modules/mail/mail-transport';
import { startServices, type ServiceHarness } from '../helpers/services';
import { SmtpSink, closedPort } from '../helpers/smtp';
import { attachments, parseMime, textOf } from '../helpers/mime';
import { FAKE_PDF, invoiceMail } from '../helpers/mail';
import { endOutboxLeases } from '../helpers/database-time';
import { waitFor, waitForDatabaseTime } from '../helpers/wait';

/**
 * The mail outbox on a real database and a real SMTP server (smtp-server on 127.0.0.1): a mail
 * is queued in the caller's transaction, sent after commit by the worker with its attachment
 * rendered then, retried with backoff while the server is down, and its status changes reach the
 * listeners inside the transaction that writes them.
 */
const RETRY = { baseMs: 1_000, maxMs: 4_000, windowMs: 60_000 };
const FROM = 'Acme Billing <billing@acme.test>';

let h: ServiceHarness;
let sink: SmtpSink;
let ctx: RequestContext;

beforeAll(async () => {
  sink = new SmtpSink();
  await sink.start(0);
  h = await startServices({ env: { SMTP_URL: sink.url, MAIL_FROM: FROM, SMTP_TIMEOUT_MS: '2000' }, services: { mail: { retry: RETRY } } });
  ctx = (await h.account()).test;
});

afterAll(async () => {
  await h?.stop();
  await sink?.stop();
});

// A mail an earlier test left queued must not be claimed by the next one.
beforeEach(async () => {
  await h.services.db.execute("UPDATE mail_outbox SET status = 'failed' WHERE status = 'queued'");
  sink.release(); // messages an earlier test left stalled (their senders gone) are answered now, not in a later test
  sink.received.length = 0;
  sink.dataSeen.length = 0;
  sink.behaviour = 'accept';
  sink.holdMs = 0;
});

type Heard = { about: OutgoingMail['about']; status: MailStatus; rowStatusInTransaction: string | undefined };

/** A mail service on the harness's database and clock, with the fake PDF renderer and a listener that records what it hears. */
function mailService(config: { smtpUrl?: string; db?: Database; smtpTimeoutMs?: number } = {}, options: MailOptions = {}): { mail: MailService; heard: Heard[] } {
  const db = config.db ?? h.services.db;
  const mail = createMailService({
    db,
    clock: h.clock,
    logger: createLogger('silent'),
    config: { smtpUrl: config.smtpUrl, smtpTimeoutMs: config.smtpTimeoutMs ?? 2_000, mailFrom: FROM, dataDir: h.services.config.dataDir },
    options: { retry: RETRY, ...options },
  });
  mail.registerAttachmentRenderer('invoice_pdf', async () => FAKE_PDF);
  const heard: Heard[] = [];
  mail.onStatusChange('invoice', async (t, about, status) => {
    // What the transaction that tells the listener holds: the status is written in it already.
    const [row] = await db.select<{ status: string }>('SELECT status FROM mail_outbox WHERE about_id = $1 ORDER BY created_at DESC, id DESC', [about.id], t);
    heard.push({ about, status, rowStatusInTransaction: row?.status });
  });
  return { mail, heard };
}

async function queue(mail: MailService, overrides: Partial<OutgoingMail> = {}): Promise<string> {
  return (await h.services.db.transaction((t) => mail.enqueue(t, ctx, invoiceMail(overrides)))).id;
}

async function row(id: string) {
  const [r] = await h.services.db.select<{ status: string; attempts: number; next_attempt_at: unknown; last_error: string | null; sent_at: unknown; locked_until: unknown; lock_token: string | null }>(
    'SELECT status, attempts, next_attempt_at, last_error, sent_at, locked_until, lock_token FROM mail_outbox WHERE id = $1',
    [id],
  );
  return r;
}

const aboutId = (n: number) => `in_mailtest${String(n).padStart(14, '0')}`;
let aboutSeq = 0;
const nextAbout = (): OutgoingMail['about'] => ({ type: 'invoice', id: aboutId(++aboutSeq) });

describe('sending over SMTP', () => {
  it('should deliver a queued mail with its subject, text and HTML parts and the rendered PDF attached', async () => {
    const { mail, heard } = mailService({ smtpUrl: sink.url });
    const about = nextAbout();
    const id = await queue(mail, { about });
    expect(sink.received).toHaveLength(0); // queued, not sent, by the commit

    const [result] = await mail.sendDue();
    expect(result).toMatchObject({ mailId: id, attempt: 1, status: 'sent', nextAttemptAt: null, error: null });
    expect(sink.received).toHaveLength(1);
    const received = sink.received[0];
    expect(received.from).toBe('billing@acme.test');
    expect(received.to).toEqual(['joerg@example.com']);

    const message = parseMime(received.raw);
    expect(message.headers.get('subject')).toBe('Rechnung INV-000042 von Acme GmbH');
    expect(message.headers.get('from')).toBe('Acme Billing <billing@acme.test>');
    expect(message.headers.get('message-id')).toBe(`<${id}@acme.test>`);
    expect(textOf(message, 'text/plain')).toContain('anbei Ihre Rechnung INV-000042 über 12,00 €.');
    expect(textOf(message, 'text/html')).toContain('<b>INV-000042</b> über 12,00&nbsp;€.');
    const [pdf, ...others] = attachments(message);
    expect(others).toHaveLength(0);
    expect(pdf.filename).toBe('INV-000042.pdf');
    expect(pdf.contentType).toBe('application/pdf');
    expect(pdf.content.equals(FAKE_PDF)).toBe(true);

    const sent = await row(id);
    expect(sent).toMatchObject({ status: 'sent', last_error: null, lock_token: null });
    expect(Number(sent.attempts)).toBe(1);
    expect(readTime(sent.sent_at)).toEqual(h.clock.now());
    expect(heard).toEqual([
      { about, status: 'queued', rowStatusInTransaction: 'queued' },
      { about, status: 'sent', rowStatusInTransaction: 'sent' },
    ]);
    // Nothing is sent twice.
    expect(await mail.sendDue()).toEqual([]);
    expect(sink.received).toHaveLength(1);
  });

  it("should write the mail in the caller's transaction, so a rollback leaves no mail to send", async () => {
    const { mail } = mailService({ smtpUrl: sink.url });
    const about = nextAbout();
    await expect(h.services.db.transaction(async (t) => {
      await mail.enqueue(t, ctx, invoiceMail({ about }));
      throw new Error('the change the mail reports failed');
    })).rejects.toThrow('the change the mail reports failed');
    expect(await mail.mailsAbout(ctx, about)).toEqual([]);
    expect(await mail.sendDue()).toEqual([]);
    expect(sink.received).toHaveLength(0);
  });

  it('should refuse to queue a mail whose attachment no renderer makes, and one without a single recipient address', async () => {
    const bare = createMailService({
      db: h.services.db, clock: h.clock, logger: createLogger('silent'),
      config: { smtpUrl: sink.url, smtpTimeoutMs: 2_000, mailFrom: FROM, dataDir: h.services.config.dataDir },
    });
    const about = nextAbout();
    await expect(h.services.db.transaction((t) => bare.enqueue(t, ctx, invoiceMail({ about })))).rejects.toThrow(/no renderer .* invoice_pdf/);
    const { mail } = mailService({ smtpUrl: sink.url });
    await expect(h.services.db.transaction((t) => mail.enqueue(t, ctx, invoiceMail({ about, to: 'a@example.com, b@example.com' })))).rejects.toThrow(/recipient/);
    expect(await mail.mailsAbout(ctx, about)).toEqual([]);
  });

  it('should keep the mail queued with a retry scheduled while the SMTP server is down, and deliver it once the server is up', async () => {
    const port = await closedPort();
    const { mail, heard } = mailService({ smtpUrl: `smtp://127.0.0.1:${port}` });
    const about = nextAbout();
    const id = await queue(mail, { about });

    const [failed] = await mail.sendDue();
    expect(failed).toMatchObject({ mailId: id, attempt: 1, status: 'queued' });
    expect(failed.error).toMatch(/ECONNECTION|ECONNREFUSED/);
    // Backoff with equal jitter: the first retry half to one base step later, on the services' clock.
    const wait = (failed.nextAttemptAt as Date).getTime() - h.clock.now().getTime();
    expect(wait).toBeGreaterThanOrEqual(RETRY.baseMs / 2);
    expect(wait).toBeLessThan(RETRY.baseMs);
    const queued = await row(id);
    expect(queued).toMatchObject({ status: 'queued', lock_token: null, sent_at: null });
    expect(Number(queued.attempts)).toBe(1);
    expect(readTime(queued.next_attempt_at)).toEqual(failed.nextAttemptAt);
    // Not due yet: nothing is claimed.
    expect(await mail.sendDue()).toEqual([]);

    const back = new SmtpSink();
    await back.start(port);
    try {
      h.clock.advance(RETRY.baseMs);
      const [delivered] = await mail.sendDue();
      expect(delivered).toMatchObject({ mailId: id, attempt: 2, status: 'sent' });
      expect(back.received).toHaveLength(1);
      const [pdf] = attachments(parseMime(back.received[0].raw));
      expect(pdf.content.equals(FAKE_PDF)).toBe(true);
    } finally {
      await back.stop();
    }
    // The failed attempt told no one anything: only queued, then sent.
    expect(heard.map((x) => x.status)).toEqual(['queued', 'sent']);
    expect(await mail.mailsAbout(ctx, about)).toEqual([
      expect.objectContaining({ id, status: 'sent', attempts: 2, lastError: null, nextAttemptAt: null }),
    ]);
  });

  it('should retry a temporary refusal (451) and mark a mail whose recipient is refused for good (550) failed at once', async () => {
    const { mail, heard } = mailService({ smtpUrl: sink.url });
    sink.behaviour = 'later';
    const later = await queue(mail);
    const [retried] = await mail.sendDue();
    expect(retried).toMatchObject({ mailId: later, status: 'queued' });
    expect(retried.error).toContain('451');

    await h.services.db.execute("UPDATE mail_outbox SET status = 'failed' WHERE id = $1", [later]);
    sink.behaviour = 'reject-recipient';
    const about = nextAbout();
    const refused = await queue(mail, { about });
    const [result] = await mail.sendDue();
    expect(result).toMatchObject({ mailId: refused, status: 'failed', nextAttemptAt: null });
    expect(result.error).toContain('550');
    expect((await row(refused)).status).toBe('failed');
    expect(heard.filter((x) => x.about.id === about.id)).toEqual([
      { about, status: 'queued', rowStatusInTransaction: 'queued' },
      { about, status: 'failed', rowStatusInTransaction: 'failed' },
    ]);
    expect(sink.received).toHaveLength(0);
  });

  it('should give up on a server that stops answering after SMTP_TIMEOUT_MS and retry later, rather than hold the worker', async () => {
    const { mail } = mailService({ smtpUrl: sink.url, smtpTimeoutMs: 500 });
    sink.behaviour = 'stall'; // reads the message, never answers
    const id = await queue(mail);
    const started = Date.now();
    const [result] = await mail.sendDue();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result).toMatchObject({ mailId: id, status: 'queued' });
    expect(result.error).toMatch(/ETIMEDOUT|timeout/i);
    expect(sink.dataSeen).toHaveLength(1);
    expect(sink.received).toHaveLength(0);
  });

  it('should give a mail up as failed once the retry window is spent, telling the listener in the same transaction', async () => {
    const port = await closedPort();
    const { mail, heard } = mailService({ smtpUrl: `smtp://127.0.0.1:${port}` });
    const about = nextAbout();
    const id = await queue(mail, { about });
    const first = h.clock.now().getTime();
    let last;
    for (let i = 0; i < 100; i++) {
      [last] = await mail.sendDue();
      if (last?.status === 'failed') break;
      h.clock.advance(RETRY.maxMs);
    }
    expect(last).toMatchObject({ mailId: id, status: 'failed', nextAttemptAt: null });
    // Not before the window ran out, and not long after (the last wait is cut short rather than overshooting).
    expect(h.clock.now().getTime() - first).toBeGreaterThanOrEqual(RETRY.windowMs - RETRY.maxMs);
    expect(h.clock.now().getTime() - first).toBeLessThanOrEqual(RETRY.windowMs + RETRY.maxMs);
    expect((await row(id)).status).toBe('failed');
    expect(heard.map((x) => [x.status, x.rowStatusInTransaction])).toEqual([['queued', 'queued'], ['failed', 'failed']]);
  });
});

describe('status listeners', () => {
  it('should record a sent mail as sent when its listener throws, without the listener\'s writes, and never send it again', async () => {
    const { mail, heard } = mailService({ smtpUrl: sink.url });
    mail.onStatusChange('invoice', async (t: Transaction, about, status) => {
      if (status === 'sent') {
        // The listener's own write in the transaction goes with it.
        await h.services.db.execute("UPDATE mail_outbox SET last_error = 'written by the listener' WHERE about_id = $1", [about.id], t);
        throw new Error('invoice row locked');
      }
    });
    const about = nextAbout();
    const id = await queue(mail, { about });
    const [claimed] = await mail.claim(10);
    const result = await mail.send(claimed);
    expect(result).toMatchObject({ mailId: id, status: 'sent' });
    expect(sink.received).toHaveLength(1);
    // Recorded sent, the listener's write gone with its failed transaction; nothing left to send.
    expect(await row(id)).toMatchObject({ status: 'sent', last_error: null });
    await endOutboxLeases(h.services.db, 'mail_outbox', [id]);
    expect(await mail.sendDue()).toEqual([]);
    expect(sink.received).toHaveLength(1);
    expect(heard.filter((x) => x.about.id === about.id).map((x) => x.status)).toEqual(['queued', 'sent']);
  });

  it('should record a mail sent after its claim was lost as sent, so no later attempt sends it again', async () => {
    const { mail, heard } = mailService({ smtpUrl: sink.url });
    const about = nextAbout();
    const id = await queue(mail, { about });
    const [slow] = await mail.claim(10);
    // The lease runs out while the first claim is still sending; another claim takes the row.
    await endOutboxLeases(h.services.db, 'mail_outbox', [id]);
    const [taker] = await mail.claim(10);
    expect(taker.id).toBe(id);
    expect(await mail.send(slow)).toMatchObject({ mailId: id, status: 'sent' });
    expect(await row(id)).toMatchObject({ status: 'sent', lock_token: null });
    // The taker's attempt (under way elsewhere) settles as not the owner and changes nothing.
    expect(await mail.send(taker)).toMatchObject({ mailId: id, status: 'sent' });
    expect(heard.filter((x) => x.about.id === about.id).map((x) => x.status)).toEqual(['queued', 'sent']);
  });
});

describe('retention', () => {
  it('should purge sent and failed mail older than 30 days, and keep queued mail however old', async () => {
    const { mail } = mailService({ smtpUrl: sink.url });
    const sent = await queue(mail);
    await mail.sendDue();
    const failed = await queue(mail);
    sink.behaviour = 'reject-recipient';
    await mail.sendDue();
    sink.behaviour = 'accept';
    const queued = await queue(mail);
    const recent = await queue(mail);
    h.clock.advance(29 * 86_400_000);
    await mail.sendDue(); // sends `queued` and `recent` 29 days on
    await h.services.db.execute("UPDATE mail_outbox SET status = 'queued', next_attempt_at = $2, updated_at = created_at WHERE id = $1", [queued, new Date(h.clock.now().getTime() + 86_400_000 * 365)]);
    h.clock.advance(2 * 86_400_000);
    await mail.purgeOld();
    const left = (await h.services.db.select<{ id: string }>('SELECT id FROM mail_outbox WHERE id IN ($1, $2, $3, $4)', [sent, failed, queued, recent])).map((r) => r.id);
    expect(left.sort()).toEqual([queued, recent].sort());
  });
});

describe('without SMTP_URL', () => {
  it('should write each mail as an .eml file under DATA_DIR/outbox, owner-only, and a resend replaces it', async () => {
    expect(h.services.mail.transportKind).toBe('smtp');
    const { mail } = mailService({});
    expect(mail.transportKind).toBe('eml');
    const dir = path.join(h.services.config.dataDir, 'outbox');
    const id = await queue(mail);
    expect(fs.existsSync(path.join(dir, `${id}.eml`))).toBe(false);
    expect(await mail.sendDue()).toEqual([expect.objectContaining({ mailId: id, status: 'sent' })]);

    const file = path.join(dir, `${id}.eml`);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const message = parseMime(fs.readFileSync(file));
    expect(message.headers.get('to')).toBe('joerg@example.com');
    expect(message.headers.get('subject')).toBe('Rechnung INV-000042 von Acme GmbH');
    expect(message.headers.get('message-id')).toBe(`<${id}@acme.test>`);
    expect(textOf(message, 'text/plain')).toContain('INV-000042');
    const [pdf] = attachments(message);
    expect(pdf).toMatchObject({ filename: 'INV-000042.pdf', contentType: 'application/pdf' });
    expect(pdf.content.equals(FAKE_PDF)).toBe(true);

    // The same row sent again (a lease that ran out mid-write): the file is replaced, not doubled.
    await h.services.db.execute("UPDATE mail_outbox SET status = 'queued' WHERE id = $1", [id]);
    expect(await mail.sendDue()).toEqual([expect.objectContaining({ mailId: id, attempt: 2, status: 'sent' })]);
    expect(fs.readdirSync(dir).filter((f) => f.startsWith(id))).toEqual([`${id}.eml`]);
    expect(new EmlFileMailTransport(dir).fileFor(id)).toBe(file);
  });
});

describe('the mail worker', () => {
  it('should send right after the commit that queued the mail, woken in-process rather than at its next poll, and wait for it when stopped', async () => {
    const { mail } = mailService({ smtpUrl: sink.url }, { pollMs: 60_000 });
    sink.behaviour = 'stall'; // the server answers once the worker is stopping
    // The rounds the worker ran, by what each claimed.
    const rounds: number[] = [];
    const claim = mail.claim.bind(mail);
    jest.spyOn(mail, 'claim').mockImplementation(async (limit) => {
      const claimed = await claim(limit);
      rounds.push(claimed.length);
      return claimed;
    });
    const worker = mail.startWorker();
    try {
      await waitFor(() => rounds.length === 1, { what: "the worker's first round" });
      expect(rounds).toEqual([0]); // its first round finds nothing; the next poll is a minute away
      const id = await queue(mail);
      await waitFor(() => sink.dataSeen.length === 1, { timeoutMs: 3_000, what: 'the mail to reach the server' });
      expect(worker.inFlight).toBe(1);
      const stopping = worker.stop();
      sink.release();
      await stopping;
      expect(worker.inFlight).toBe(0);
      expect(sink.received).toHaveLength(1);
      expect((await row(id)).status).toBe('sent');
    } finally {
      await worker.stop();
    }
  });

  it('should keep the lease of a mail in flight, so another instance does not send it again', async () => {
    const { mail } = mailService({ smtpUrl: sink.url }, { leaseMs: 600, pollMs: 50 });
    const other = mailService({ smtpUrl: sink.url }).mail;
    // The server reads the message and answers only when released (within the 2 s SMTP timeout).
    sink.behaviour = 'stall';
    const worker = mail.startWorker();
    try {
      const id = await queue(mail);
      await waitFor(() => sink.dataSeen.length === 1, { timeoutMs: 3_000, what: 'the mail to reach the server' });
      // Past the lease as it stood when the mail reached the server, on the database's clock.
      await waitForDatabaseTime(h.services.db, readTime((await row(id)).locked_until) as Date, { timeoutMs: 3_000 });
      expect(await other.claim(10)).toEqual([]);
      sink.release();
      await waitFor(async () => (await row(id)).status === 'sent', { timeoutMs: 5_000, what: 'the mail to be sent' });
    } finally {
      sink.release();
      await worker.stop();
    }
    expect(sink.received).toHaveLength(1);
  });
});

describe('two instances on one database', () => {
  let db2: Database;
  beforeAll(async () => {
    // Another instance's connection: its own pool (PostgreSQL) or its own SQLite connection.
    db2 = new Database({ url: h.services.config.databaseUrl, models: [] });
    await db2.init();
  });
  afterAll(() => db2?.close());

  it('should never claim one mail for both, however their claims interleave', async () => {
    const { mail: a } = mailService({ smtpUrl: sink.url });
    const { mail: b } = mailService({ smtpUrl: sink.url, db: db2 });
    const ids = new Set<string>();
    for (let i = 0; i < 30; i++) ids.add(await queue(a));
    const claimedBy = { a: [] as string[], b: [] as string[] };
    const drain = async (mail: MailService, into: string[]) => {
      for (;;) {
        const claimed = await mail.claim(3);
        if (claimed.length === 0) return;
        into.push(...claimed.map((c) => c.id));
      }
    };
    await Promise.all([drain(a, claimedBy.a), drain(b, claimedBy.b), drain(a, claimedBy.a), drain(b, claimedBy.b)]);
    const all = [...claimedBy.a, ...claimedBy.b];
    expect(all).toHaveLength(30);
    expect(new Set(all)).toEqual(ids);
  });

  it('should send each mail once while both workers run', async () => {
    const { mail: a } = mailService({ smtpUrl: sink.url }, { pollMs: 20, concurrency: 4 });
    const { mail: b } = mailService({ smtpUrl: sink.url, db: db2 }, { pollMs: 20, concurrency: 4 });
    sink.holdMs = 30;
    const sendsA = jest.spyOn(a, 'send');
    const sendsB = jest.spyOn(b, 'send');
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(await queue(a));
    const workers = [a.startWorker(), b.startWorker()];
    try {
      await waitFor(async () => {
        const [r] = await h.services.db.select<{ n: number }>("SELECT COUNT(*) AS n FROM mail_outbox WHERE status = 'sent' AND id IN (" + ids.map((_, i) => `$${i + 1}`).join(', ') + ')', ids);
        return Number(r.n) === ids.length;
      }, { timeoutMs: 20_000, what: 'every mail to be sent', intervalMs: 20 });
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    const messageIds = sink.received.map((m) => parseMime(m.raw).headers.get('message-id'));
    expect(messageIds).toHaveLength(40);
    expect(new Set(messageIds).size).toBe(40);
    expect(sendsA.mock.calls.length + sendsB.mock.calls.length).toBe(40);
    expect(sendsA.mock.calls.length).toBeGreaterThan(0);
    expect(sendsB.mock.calls.length).toBeGreaterThan(0);
  });
});
