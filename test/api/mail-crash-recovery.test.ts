import { readTime } from '../../src/db/database';
import { startServices, type ServiceHarness } from '../helpers/services';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import { SmtpSink } from '../helpers/smtp';
import { parseMime } from '../helpers/mime';
import { invoiceMail } from '../helpers/mail';
import { endOutboxLeases } from '../helpers/database-time';

/**
 * A service killed (kill -9) after the commit that queued a mail and before the mail went out:
 * the mail goes out after the restart. The mail is committed here, through the services on the
 * same database (no invoice API yet; no instance runs a worker at that moment). The spawned
 * service, the real `payorch start` with its workers, claims it and starts the SMTP conversation;
 * the SMTP server reads the message and holds its answer, so the kill lands while the send is
 * under way, unacknowledged. The restarted service sends it once the dead process's lease has run
 * out (moved back on the database's clock here rather than waited for: a minute by default).
 */
let h: ServiceHarness;
let sink: SmtpSink;
let instance: SpawnedInstance | undefined;

beforeAll(async () => {
  sink = new SmtpSink('stall');
  await sink.start(0);
  h = await startServices({ env: { SMTP_URL: sink.url } });
});

afterAll(async () => {
  await instance?.stop('SIGKILL');
  await h?.stop();
  await sink?.stop();
});

function startInstance(): Promise<SpawnedInstance> {
  return spawnInstance(
    { DATABASE_URL: h.services.config.databaseUrl, DATA_DIR: h.services.config.dataDir, SMTP_URL: sink.url, RUN_WORKERS: 'true' },
    '',
  );
}

async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined && found !== false) return found as T;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function row(id: string) {
  const [r] = await h.services.db.select<{ status: string; attempts: number; locked_until: unknown; sent_at: unknown }>(
    'SELECT status, attempts, locked_until, sent_at FROM mail_outbox WHERE id = $1',
    [id],
  );
  return r;
}

describe('a service killed between the commit that queued a mail and its send', () => {
  it('should send the mail after it is restarted', async () => {
    const ctx = (await h.account()).test;
    // Committed; no worker runs yet. No attachment: the spawned service has no invoice renderer
    // registered on this branch (the invoice module registers it).
    const { id } = await h.services.db.transaction((t) => h.services.mail.enqueue(t, ctx, invoiceMail({ attachments: [] })));

    instance = await startInstance();
    await waitFor('the send to be under way', () => sink.dataSeen.length === 1, 20_000);
    await instance.stop('SIGKILL');
    instance = undefined;

    // Nothing acknowledged it; the row is still queued, leased to the dead process.
    expect(sink.received).toHaveLength(0);
    const orphan = await row(id);
    expect(orphan.status).toBe('queued');
    expect(Number(orphan.attempts)).toBe(1);
    expect(readTime(orphan.locked_until)).not.toBeNull();

    sink.behaviour = 'accept'; // the server answers again
    await endOutboxLeases(h.services.db, 'mail_outbox', [id]);
    instance = await startInstance();
    await waitFor('the mail to be sent', async () => (await row(id)).status === 'sent', 20_000);

    expect(sink.received).toHaveLength(1);
    const resent = parseMime(sink.received[0].raw);
    const interrupted = parseMime(sink.dataSeen[0]);
    expect(resent.headers.get('message-id')).toBe(`<${id}@localhost>`);
    expect(resent.headers.get('message-id')).toBe(interrupted.headers.get('message-id'));
    expect(resent.headers.get('subject')).toBe('Rechnung INV-000042 von Acme GmbH');
    const sent = await row(id);
    expect(Number(sent.attempts)).toBe(2);
    // Once after the restart: nothing more arrives.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(sink.received).toHaveLength(1);
  }, 120_000);
});
