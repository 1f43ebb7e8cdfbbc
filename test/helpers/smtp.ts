import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream } from 'smtp-server';

/** A message the server accepted (250 after DATA). */
export interface ReceivedMail {
  from: string;
  to: string[];
  raw: Buffer;
  at: number;
}

/**
 * How the server answers: `accept`; `stall` (reads the message, then answers nothing until
 * `release()`: a send in progress); `reject-recipient` (550 to RCPT TO, a refusal for good);
 * `later` (451 to RCPT TO, a temporary refusal).
 */
export type SmtpBehaviour = 'accept' | 'stall' | 'reject-recipient' | 'later';

/**
 * A real SMTP server on 127.0.0.1 (the `smtp-server` package) that keeps what it receives: the
 * peer of the mail tests. Plain SMTP, no authentication.
 */
export class SmtpSink {
  readonly received: ReceivedMail[] = [];
  /** Messages whose DATA arrived, answered or not. */
  readonly dataSeen: Buffer[] = [];
  behaviour: SmtpBehaviour = 'accept';
  /** Held before answering DATA, per message (a slow server). */
  holdMs = 0;
  private server?: SMTPServer;
  private stalled: Array<() => void> = [];
  port = 0;

  constructor(behaviour: SmtpBehaviour = 'accept') {
    this.behaviour = behaviour;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** Listens on `port` (0: any free one; the same one again after stop(), to stand for a server coming back). */
  async start(port = this.port): Promise<number> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      closeTimeout: 200,
      onRcptTo: (_address, _session, callback) => {
        if (this.behaviour === 'reject-recipient') return callback(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }));
        if (this.behaviour === 'later') return callback(Object.assign(new Error('try again later'), { responseCode: 451 }));
        callback();
      },
      onData: (stream: SMTPServerDataStream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks);
          this.dataSeen.push(raw);
          const accept = () => {
            this.received.push({
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address),
              raw,
              at: Date.now(),
            });
            callback();
          };
          if (this.behaviour === 'stall') this.stalled.push(accept);
          else if (this.holdMs > 0) setTimeout(accept, this.holdMs);
          else accept();
        });
      },
    });
    server.on('error', () => undefined); // a client that vanishes mid-session is no test failure
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.port = (server.server.address() as AddressInfo).port;
    return this.port;
  }

  /** Answers the stalled messages (their senders may be gone) and accepts from now on. */
  release(): void {
    this.behaviour = 'accept';
    const held = this.stalled;
    this.stalled = [];
    for (const accept of held) accept();
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A port nothing listens on (taken, then given back): a mail server that is down. */
export async function closedPort(): Promise<number> {
  const sink = new SmtpSink();
  const port = await sink.start(0);
  await sink.stop();
  return port;
}
