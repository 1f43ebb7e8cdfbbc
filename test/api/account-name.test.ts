import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freshDatabase, type TestDatabase } from '../helpers/db';
import { httpsRequest } from '../helpers/http';
import { parseMime, textOf } from '../helpers/mime';
import { SmtpSink } from '../helpers/smtp';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import { waitFor } from '../helpers/wait';
import { PdfReader, squash } from '../unit/invoices/pdf-text';

/**
 * The merchant's name from the first start: `payorch start` on an empty database names the
 * default account from ACCOUNT_NAME (or prints the one command that names it), and what a
 * customer sees (the PDF, the mail, the hosted page) carries that name, never "Default account".
 * A real service in its own process, as `npm start` runs it, with its mail worker and an SMTP server.
 */

const NAME = 'Łódź Müller & Söhne GmbH';
const sink = new SmtpSink();
const reader = new PdfReader();
let database: TestDatabase;
let instance: SpawnedInstance | undefined;

beforeAll(() => sink.start());
afterAll(async () => {
  reader.close();
  await sink.stop();
});
beforeEach(async () => {
  database = await freshDatabase();
});
afterEach(async () => {
  await instance?.stop('SIGKILL');
  instance = undefined;
  await database.drop();
});

const output = () => instance!.output.join('');
const ca = () => fs.readFileSync(path.join(database.dataDir, 'tls', 'cert.pem'), 'utf8');

describe('ACCOUNT_NAME', () => {
  it("should name the default account, so the PDF, the mail and the hosted page of a paid invoice show the merchant's name", async () => {
    instance = await spawnInstance({ DATABASE_URL: database.url, DATA_DIR: database.dataDir, ACCOUNT_NAME: ` ${NAME} `, SMTP_URL: sink.url, PUBLIC_URL: 'https://pay.example.com' }, '');
    const started = output();
    expect(started).toContain(`Created the default account "${NAME}".`);
    // Named already: no command to name it.
    expect(started).not.toContain('/v1/account');
    // SMTP_URL without MAIL_FROM: the start warns once that mail leaves from the placeholder sender.
    expect(started.split('MAIL_FROM is not set').length - 1).toBe(1);
    const key = /test key: (sk_test_\S+)/.exec(started)![1];
    const request = (method: string, p: string, opts: { body?: unknown; auth?: boolean } = {}) =>
      httpsRequest(instance!.baseUrl, ca(), method, p, { key: opts.auth === false ? undefined : key, body: opts.body });

    expect((await request('GET', '/v1/account')).body.data.name).toBe(NAME);
    const customer = (await request('POST', '/v1/customers', { body: { email: 'kunde@example.com', name: 'Kunde', locale: 'de' } })).body.data;
    const invoice = (await request('POST', '/v1/invoices', { body: { customerId: customer.id, currency: 'eur', lineItems: [{ description: 'Beratung', unitAmount: 246912 }] } })).body.data;
    const sent = (await request('POST', `/v1/invoices/${invoice.id}/send`)).body.data;
    expect(sent.status).toBe('sent');

    // The hosted page, then a card payment through its public route: the customer pays.
    const page = await request('GET', new URL(sent.hostedUrl).pathname, { auth: false });
    expect(page.text).toContain('Müller &amp; Söhne');
    expect(page.text).not.toContain('Default account');
    const card = { number: '4242424242424242', expMonth: 12, expYear: new Date().getFullYear() + 3, cvc: '123' };
    const paid = await request('POST', `/v1/public/invoices/${invoice.id}/pay`, { auth: false, body: { card } });
    expect(paid.body.data.status).toBe('succeeded');

    // The mail the worker sent over SMTP, and the paid invoice's PDF.
    const received = await waitFor(() => sink.received.find((m) => m.to.includes('kunde@example.com')), { timeoutMs: 30_000, what: 'the invoice mail' });
    const mail = parseMime(received.raw);
    expect(mail.headers.get('subject')).toBe(`[Testmodus] Rechnung ${sent.number} von ${NAME}`);
    for (const part of ['text/plain', 'text/html']) {
      const text = textOf(mail, part)!;
      expect([part, text.replace(/&amp;/g, '&').includes(NAME), text.includes('Default account')]).toEqual([part, true, false]);
    }
    const pdf = squash(reader.text((await request('GET', `/v1/invoices/${invoice.id}/pdf`)).buffer));
    expect(pdf).toContain('BEZAHLT');
    // The embedded font prints the Polish letters as typed.
    expect(pdf).toContain(NAME);
    expect(pdf).not.toContain('Default account');
  }, 120_000);

  it('should print beside the keys the one command that names the account when ACCOUNT_NAME is not set, and that command works', async () => {
    instance = await spawnInstance({ DATABASE_URL: database.url, DATA_DIR: database.dataDir, MAIL_FROM: 'Acme Billing <billing@acme.test>', SMTP_URL: sink.url }, '');
    const started = output();
    expect(started).toContain('Created the default account. These keys are shown only once');
    expect(started).not.toContain('MAIL_FROM is not set');
    const command = /^ {2}(curl -sk -X PATCH \S+\/v1\/account .*)$/m.exec(started)![1];
    const key = /test key: (sk_test_\S+)/.exec(started)![1];
    expect(command).toContain(`Bearer ${key}`);
    // Run as printed, with the merchant's name put in: curl against the service as a user would.
    const url = new URL(/https:\/\/\S+\/v1\/account/.exec(command)![0]);
    const runnable = command.replace(url.origin, instance.baseUrl).replace('Your business name', 'Acme Tools Ltd');
    const answer = JSON.parse(execFileSync('sh', ['-c', runnable], { encoding: 'utf8' }));
    expect(answer.data.name).toBe('Acme Tools Ltd');
  }, 120_000);

  it('should refuse an ACCOUNT_NAME it cannot use, naming the variable', () => {
    let message = '';
    try {
      execFileSync(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'payorch.js'), 'start'], {
        env: { ...process.env, PAYORCH_FROM_SOURCE: '', DATABASE_URL: database.url, DATA_DIR: database.dataDir, PORT: '0', HTTP_PORT: '0', ACCOUNT_NAME: 'x'.repeat(201) },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      message = String((err as { stderr: string }).stderr);
    }
    expect(message).toContain('Invalid configuration: ACCOUNT_NAME must be a name of 1 to 200 characters');
  }, 60_000);
});
