import fs from 'node:fs';
import path from 'node:path';
import { readTime } from '../../src/db/database';
import { loadTls } from '../../src/tls';
import { startServices, type ServiceHarness } from '../helpers/services';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import { SmtpSink } from '../helpers/smtp';
import { attachments, parseMime, textOf } from '../helpers/mime';
import { endOutboxLeases } from '../helpers/database-time';

/**
 * A service killed (kill -9) after the commit that queued an invoice's e-mail and before the mail
 * went out: the mail goes out after the restart, PDF attached, and the invoice's `emailStatus`
 * follows. Everything goes through the real `payorch start` with its workers, in its own process:
 * the invoice is created and sent over its API; its mail worker, woken by that commit, claims the
 * mail and starts the SMTP conversation; the SMTP server reads the message and holds its answer,
 * so the kill lands while the send is under way, unacknowledged. The restarted service sends it
 * once the dead process's lease has run out (moved back on the database's clock here rather than
 * waited for: a minute by default). This process only reads the database and creates the account.
 */
let h: ServiceHarness;
let sink: SmtpSink;
let ca: string;
let key: string;
let instance: SpawnedInstance | undefined;

beforeAll(async () => {
  sink = new SmtpSink('stall');
  await sink.start(0);
  h = await startServices({ env: { SMTP_URL: sink.url } });
  key = (await h.services.accounts.createAccount({ name: 'Acme GmbH' })).testKey.secret!;
  // The certificate every start of the service finds in its data dir (made once, here, to trust it).
  ca = (await loadTls({ dataDir: h.services.config.dataDir })).cert;
});

afterAll(async () => {
  await instance?.stop('SIGKILL');
  await h?.stop();
  await sink?.stop();
});

function startInstance(): Promise<SpawnedInstance> {
  return spawnInstance(
    { DATABASE_URL: h.services.config.databaseUrl, DATA_DIR: h.services.config.dataDir, SMTP_URL: sink.url, MAIL_FROM: 'Acme Billing <billing@acme.test>', RUN_WORKERS: 'true' },
    ca,
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

async function mailAbout(invoiceId: string) {
  const rows = await h.services.db.select<{ id: string; status: string; attempts: number; locked_until: unknown }>(
    "SELECT id, status, attempts, locked_until FROM mail_outbox WHERE about_type = 'invoice' AND about_id = $1",
    [invoiceId],
  );
  expect(rows).toHaveLength(1);
  return rows[0];
}

describe('a service killed between the commit that queued an invoice\'s e-mail and its send', () => {
  it('should send the invoice\'s mail with its PDF after it is restarted, and mark the invoice\'s emailStatus sent', async () => {
    instance = await startInstance();
    const customer = await instance.request('POST', '/v1/customers', { key, body: { email: 'joerg@example.com', name: 'Jörg Müller', locale: 'de' } });
    expect(customer.status).toBe(201);
    const created = await instance.request('POST', '/v1/invoices', { key, body: { customerId: customer.body.data.id, currency: 'eur', lineItems: [{ description: 'Beratung', unitAmount: 1200 }] } });
    expect(created.status).toBe(201);
    const inv = created.body.data as { id: string; number: string };

    // The send commits the sent state and the queued mail; the worker, woken by the commit, sends.
    const sent = await instance.request('POST', `/v1/invoices/${inv.id}/send`, { key });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({ status: 'sent', emailStatus: 'queued' });
    await waitFor('the send to be under way', () => sink.dataSeen.length === 1, 20_000);
    await instance.stop('SIGKILL');
    instance = undefined;

    // Nothing acknowledged it: the invoice stays sent, its mail queued, leased to the dead process.
    expect(sink.received).toHaveLength(0);
    const orphan = await mailAbout(inv.id);
    expect([orphan.status, Number(orphan.attempts)]).toEqual(['queued', 1]);
    expect(readTime(orphan.locked_until)).not.toBeNull();
    const [stored] = await h.services.db.select<{ status: string; email_status: string }>('SELECT status, email_status FROM invoices WHERE id = $1', [inv.id]);
    expect(stored).toEqual({ status: 'sent', email_status: 'queued' });

    sink.behaviour = 'accept'; // the server answers again
    await endOutboxLeases(h.services.db, 'mail_outbox', [orphan.id]);
    instance = await startInstance();
    await waitFor('the mail to be sent', async () => (await mailAbout(inv.id)).status === 'sent', 20_000);

    expect(sink.received).toHaveLength(1);
    expect(sink.received[0].to).toEqual(['joerg@example.com']);
    const resent = parseMime(sink.received[0].raw);
    const interrupted = parseMime(sink.dataSeen[0]);
    // The same message, sent again: same Message-ID (a receiver may drop the duplicate), same PDF.
    expect(resent.headers.get('message-id')).toBe(`<${orphan.id}@acme.test>`);
    expect(resent.headers.get('message-id')).toBe(interrupted.headers.get('message-id'));
    expect(resent.headers.get('subject')).toContain(inv.number);
    expect(textOf(resent, 'text/plain')?.replace(/[\u00a0\u202f]/g, ' ')).toContain('12,00 €');
    const [pdf] = attachments(resent);
    expect(pdf).toMatchObject({ filename: `${inv.number}.pdf`, contentType: 'application/pdf' });
    expect(pdf.content.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(Buffer.compare(pdf.content, attachments(interrupted)[0].content)).toBe(0);
    // The bytes a download of the sent invoice gives.
    const download = await instance.request('GET', `/v1/invoices/${inv.id}/pdf`, { key });
    expect(download.headers['content-type']).toBe('application/pdf');
    expect(Buffer.compare(pdf.content, download.buffer)).toBe(0);

    expect(Number((await mailAbout(inv.id)).attempts)).toBe(2);
    expect((await instance.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data).toMatchObject({ status: 'sent', emailStatus: 'sent' });
    // Once after the restart: nothing more arrives. A second invoice's mail wakes the worker; it
    // claims and sends that one in a claim round after the first was settled, which would have
    // taken the first again too (it claims up to four at once): the first was not (its attempts
    // are counted at claim time), and only the second arrived.
    const next = await instance.request('POST', '/v1/invoices', { key, body: { customerId: customer.body.data.id, currency: 'eur', lineItems: [{ description: 'Nachbetreuung', unitAmount: 300 }] } });
    expect(next.status).toBe(201);
    expect((await instance.request('POST', `/v1/invoices/${next.body.data.id}/send`, { key })).status).toBe(200);
    const nextMail = await waitFor('the second mail to be sent', async () => {
      const mail = await mailAbout(next.body.data.id);
      return mail.status === 'sent' ? mail : undefined;
    }, 20_000);
    expect(Number((await mailAbout(inv.id)).attempts)).toBe(2);
    expect(sink.received.map((m) => parseMime(m.raw).headers.get('message-id'))).toEqual([`<${orphan.id}@acme.test>`, `<${nextMail.id}@acme.test>`]);
    // No .eml fallback was written: the mail went over SMTP.
    expect(fs.existsSync(path.join(h.services.config.dataDir, 'outbox'))).toBe(false);
  }, 120_000);
});
