import type { Services } from '../src/services';

export interface MailWorker {
  stop(): Promise<void>;
}

/**
 * The mail worker of one instance (logic in MailService): sends queued mail after the commit that
 * queued it, with retries. Several instances may run it against one database: claims are leased
 * (SKIP LOCKED on PostgreSQL), so no mail is sent by two at once.
 */
export function startMailWorker(services: Services): MailWorker {
  const loop = services.mail.startWorker();
  return { stop: () => loop.stop() };
}
