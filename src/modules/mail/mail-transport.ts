import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import { randomBase62 } from '../../core/ids';
import { PRIVATE_FILE_MODE, ensurePrivateDir } from '../../core/private-files';

/** A message ready to go: attachments rendered. */
export interface MailMessage {
  /** The outbox row's id: it names the Message-ID and the .eml file, so a resend is recognisably the same mail. */
  id: string;
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The Date header: when the mail was queued, the same on every attempt. */
  date: Date;
  attachments: Array<{ filename: string; contentType: string; content: Buffer }>;
}

/** Where outgoing mail goes: an SMTP server, or .eml files. */
export interface MailTransport {
  readonly kind: 'smtp' | 'eml';
  /** Resolves once the message is handed over; rejects with MailSendError. */
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/** A message that did not go out; `permanent` when the server refused it for good (a 5xx to its recipient or content). */
export class MailSendError extends Error {
  constructor(message: string, readonly permanent: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MailSendError';
  }
}

/** The Message-ID of an outbox row: `<id@domain of the sender>`, the same on every attempt. */
export function messageIdFor(id: string, from: string): string {
  const domain = /@([^\s<>@]+)>?\s*$/.exec(from)?.[1] ?? 'localhost';
  return `<${id}@${domain}>`;
}

function mailOptions(m: MailMessage): Mail.Options {
  return {
    from: m.from,
    to: m.to,
    subject: m.subject,
    text: m.text,
    html: m.html,
    date: m.date,
    messageId: messageIdFor(m.id, m.from),
    attachments: m.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })),
  };
}

/** SMTP replies that mean "never": the recipient or the message refused with a 5xx, or an address nodemailer cannot send to. */
function isPermanent(err: { code?: string; command?: string; responseCode?: number }): boolean {
  if (err.code === 'EENVELOPE' && err.command === 'API') return true;
  const code = err.responseCode ?? 0;
  return code >= 500 && code < 600 && (err.command === 'RCPT TO' || err.command === 'DATA');
}

/** The reason kept on the row and logged: nodemailer's message (the server's reply in it), never the message itself. */
function reason(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return `${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}`;
}

export interface SmtpTransportOptions {
  url: string;
  /** Connect, greeting, socket inactivity and DNS timeouts, each. */
  timeoutMs: number;
}

/**
 * Mail over SMTP through nodemailer, one connection per message (a pool would keep sockets open
 * to a server that is mostly idle). Every wait has a timeout, so a server that accepts the
 * connection and then hangs cannot hold a worker slot: the attempt fails and is retried.
 */
export class SmtpMailTransport implements MailTransport {
  readonly kind = 'smtp';
  private readonly transporter: Mail;

  constructor(options: SmtpTransportOptions) {
    this.transporter = nodemailer.createTransport({
      url: options.url,
      connectionTimeout: options.timeoutMs,
      greetingTimeout: options.timeoutMs,
      socketTimeout: options.timeoutMs,
      dnsTimeout: options.timeoutMs,
      // Content is only ever what the outbox row holds: never a local file or a URL nodemailer would fetch.
      disableFileAccess: true,
      disableUrlAccess: true,
    });
  }

  async send(message: MailMessage): Promise<void> {
    try {
      await this.transporter.sendMail(mailOptions(message));
    } catch (err) {
      throw new MailSendError(reason(err), isPermanent(err as object), { cause: err });
    }
  }

  close(): void {
    this.transporter.close();
  }
}

/**
 * Mail written as `<outbox id>.eml` files under `dir` (DATA_DIR/outbox) when no SMTP server is
 * configured: the message nodemailer would send, with CRLF line endings throughout as RFC 5322
 * wants them (nodemailer's stream transport writes the text parts' own line breaks as bare LF
 * unless told otherwise; a mail client or an MTA fed the file reads it as sent). The directory is 0700 and each
 * file 0600 (customers' addresses, invoices); a file is written aside and renamed into place, so
 * a reader never sees half a message and a resend of the same row replaces it.
 */
export class EmlFileMailTransport implements MailTransport {
  readonly kind = 'eml';
  private readonly composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows', disableFileAccess: true, disableUrlAccess: true });

  constructor(readonly dir: string) {}

  /** The file a mail is written to. */
  fileFor(id: string): string {
    return path.join(this.dir, `${id.replace(/[^A-Za-z0-9_-]/g, '_')}.eml`);
  }

  async send(message: MailMessage): Promise<void> {
    const file = this.fileFor(message.id);
    const partial = `${file}.${randomBase62(8)}.partial`;
    try {
      const info = await this.composer.sendMail(mailOptions(message));
      ensurePrivateDir(this.dir);
      await fs.promises.writeFile(partial, info.message as Buffer, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
      await fs.promises.chmod(partial, PRIVATE_FILE_MODE); // in case the umask took the owner's write bit
      await fs.promises.rename(partial, file);
    } catch (err) {
      await fs.promises.rm(partial, { force: true }).catch(() => undefined);
      throw new MailSendError(reason(err), false, { cause: err });
    }
  }

  close(): void {
    this.composer.close();
  }
}

/** SMTP when SMTP_URL is set, otherwise .eml files under DATA_DIR/outbox. */
export function createMailTransport(config: { smtpUrl?: string; smtpTimeoutMs: number; dataDir: string }): MailTransport {
  return config.smtpUrl
    ? new SmtpMailTransport({ url: config.smtpUrl, timeoutMs: config.smtpTimeoutMs })
    : new EmlFileMailTransport(path.join(config.dataDir, 'outbox'));
}
