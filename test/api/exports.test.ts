import fs from 'node:fs';
import path from 'node:path';
import { FixedClock } from '../../src/core/clock';
import { DomainError } from '../../src/core/errors';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';

/**
 * Exports (API.md §2): a list written to a CSV or JSON Lines file by the job, page by page, in
 * the list's own order and objects; its filters, refusals, expiry after 24 hours on the
 * services' clock, scoping, and a claim that resumes a file where an interrupted one left it.
 */
const PAGE = 37;
const START = new Date('2031-05-01T08:00:00.000Z');
const clock = new FixedClock(START);
let app: TestApp;
let key: string;

type Json = Record<string, any>;
const TRICKY = ['=HYPERLINK("http://evil.example")', '+1 555 0100', '-2+3', '@SUM(A1:A2)', 'comma, "quoted"\nand a line break', 'needle in text', 'plain'];
let customerId: string;
let seeded = 0;

const post = (p: string, body: Json, k = key) => app.request('POST', p, { key: k, body });
const get = (p: string, k = key) => app.request('GET', p, { key: k });
const run = () => app.server.services.exports.runDue(clock.now());

/** Every page of a list (100 a page) concatenated: what an export of it must hold. */
async function listAll(query = '', k = key): Promise<Json[]> {
  const all: Json[] = [];
  for (let page = 1; ; page++) {
    const res = await get(`/v1/payments?pageSize=100&page=${page}${query ? `&${query}` : ''}`, k);
    expect(res.status).toBe(200);
    all.push(...res.body.data);
    if (res.body.data.length < 100) return all;
  }
}

async function createExport(body: Json, k = key): Promise<Json> {
  const res = await post('/v1/exports', body, k);
  if (res.status !== 201) throw new Error(`export not created: ${res.status} ${res.text}`);
  return res.body.data;
}

/** RFC 4180 as a spreadsheet reads it: quoted cells may hold commas, quotes (doubled) and line breaks; rows end with CRLF. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  expect([cell, row]).toEqual(['', []]); // the file ends with a whole row
  return rows;
}

/** What a cell must say for a field of the REST object. */
function cellOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The CSV file against the objects: one header naming each field, then one row per object, in order. */
function expectCsv(text: string, objects: Json[]): void {
  const [header, ...rows] = parseCsv(text);
  expect([...header].sort()).toEqual(Object.keys(objects[0]).sort());
  expect(rows).toEqual(objects.map((o) => header.map((field) => cellOf(o[field]))));
}

const jsonl = (text: string) => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Json);

async function download(id: string, k = key) {
  return app.request('GET', `/v1/exports/${id}/file`, { key: k });
}

async function seedPayments(count: number): Promise<void> {
  for (let i = 0; i < count; i += 10) {
    // Ten at the same instant (ties broken by id), then a second on.
    await Promise.all(Array.from({ length: Math.min(10, count - i) }, async (_, j) => {
      const n = seeded + i + j;
      const res = await post('/v1/payments', {
        amount: 100 + n, currency: n % 3 === 0 ? 'USD' : 'EUR', paymentMethod: n % 9 === 4 ? 'pm_card_declined' : 'pm_card_visa',
        description: TRICKY[n % TRICKY.length], metadata: { n: String(n) }, ...(n % 5 === 0 ? { customerId } : {}),
      });
      expect(res.status).toBe(201);
    }));
    clock.advance(1000);
  }
  seeded += count;
}

beforeAll(async () => {
  app = await startTestApp({ clock, serviceOptions: { exports: { pageSize: PAGE, retryMs: 0 } } });
  key = app.account.testKey;
  customerId = (await post('/v1/customers', { email: 'export-me@example.com', name: '=cmd|calc' })).body.data.id;
  await seedPayments(250);
});
afterAll(() => app.stop());
afterEach(() => jest.restoreAllMocks());

/** A call of PaymentService.list that read an export's page: a page of the list by its cursor, not counted. */
const isExportPage = (args: unknown[]) => (args[3] as { countTotal?: boolean } | undefined)?.countTotal === false;
/** The list queries of the export pages among `calls`. */
const exportPages = (calls: unknown[][]) => calls.filter(isExportPage).map((call) => call[1] as { pageSize: number; startingAfter?: string });

describe(`exports of payments (${DIALECT})`, () => {
  it('should write every payment, page by page, in csv and jsonl equal to the list\'s pages concatenated', async () => {
    const expected = await listAll();
    expect(expected).toHaveLength(250);
    const pages = jest.spyOn(app.server.services.payments, 'list');
    const csv = await createExport({ resource: 'payments', format: 'csv' });
    expect(csv).toMatchObject({ object: 'export', status: 'queued', resource: 'payments', format: 'csv', filters: {}, rowCount: 0, progress: 0, url: null, completedAt: null });
    expect(csv.id).toMatch(/^exp_[A-Za-z0-9]{20,}$/);
    expect(new Date(csv.expiresAt).getTime() - new Date(csv.createdAt).getTime()).toBe(24 * 3_600_000);
    const lines = await createExport({ resource: 'payments', format: 'jsonl', filters: {} });

    const early = await download(csv.id);
    expect([early.status, early.body.error.code]).toEqual([409, 'export_not_ready']);

    expect(await run()).toEqual({ completed: 2, failed: 0, released: 0, purged: 0 });
    // Seven pages of 37 each (the seventh short, so no eighth read), never more than a page at once.
    const exported = exportPages(pages.mock.calls);
    expect(exported.map((query) => query.pageSize)).toEqual(Array(14).fill(PAGE));
    expect(exported.filter((query) => query.startingAfter === undefined)).toHaveLength(2);

    const done = (await get(`/v1/exports/${csv.id}`)).body.data;
    expect(done).toMatchObject({ status: 'complete', rowCount: 250, progress: 1, failureMessage: null });
    expect(done.url).toMatch(new RegExp(`^https://[^/]+/v1/exports/${csv.id}/file$`));
    const file = await download(csv.id);
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(file.headers['content-disposition']).toBe(`attachment; filename="${csv.id}.csv"`);
    expect(Number(file.headers['content-length'])).toBe(file.buffer.length);
    expectCsv(file.text, expected);
    // Formulas are defused, and the quoting holds a comma, quotes and a line break in one cell.
    expect(file.text).toContain(`,"'=HYPERLINK(""http://evil.example"")",`);
    expect(file.text).toContain(",'+1 555 0100,");
    expect(file.text).toContain(',"comma, ""quoted""\nand a line break",');
    expect(file.text.endsWith('\r\n')).toBe(true);

    const text = await download(lines.id);
    expect(text.headers['content-type']).toBe('application/x-ndjson');
    expect(jsonl(text.text)).toEqual(expected);
    expect(text.text.split('\n')).toHaveLength(251);

    // Owner-only, under DATA_DIR/exports/<account>/.
    const dir = path.join(app.config.dataDir, 'exports', app.account.accountId);
    const mode = (p: string) => (fs.statSync(p).mode & 0o777).toString(8);
    expect([mode(dir), mode(path.join(dir, `${csv.id}.csv`)), mode(path.join(dir, `${lines.id}.jsonl`))]).toEqual(['700', '600', '600']);

    const listed = (await get('/v1/exports?pageSize=100')).body;
    expect(listed.data.map((e: Json) => e.id)).toEqual(expect.arrayContaining([csv.id, lines.id]));
  });

  it('should apply the filters as the list does', async () => {
    const cases: Array<Record<string, string>> = [{ status: 'failed' }, { customerId }, { search: 'NEEDLE' }, { status: 'succeeded', search: 'quoted' }];
    for (const filters of cases) {
      const query = new URLSearchParams(filters).toString();
      const expected = await listAll(query);
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.length).toBeLessThan(250);
      const made = await createExport({ resource: 'payments', format: 'jsonl', filters });
      await run();
      const got = (await get(`/v1/exports/${made.id}`)).body.data;
      expect(got).toMatchObject({ status: 'complete', rowCount: expected.length, filters });
      expect(jsonl((await download(made.id)).text)).toEqual(expected);
    }
  });

  it('should export the other lists as they answer their objects', async () => {
    const customers = await createExport({ resource: 'customers', format: 'csv', filters: { email: 'EXPORT-ME@example.com' } });
    const events = await createExport({ resource: 'events', format: 'jsonl', filters: { type: 'customer.created' } });
    await run();
    const customer = (await get(`/v1/customers/${customerId}`)).body.data;
    expectCsv((await download(customers.id)).text, [customer]);
    expect((await download(customers.id)).text).toContain(",'=cmd|calc,");
    const listedEvents = (await get('/v1/events?type=customer.created&pageSize=100')).body.data;
    expect(jsonl((await download(events.id)).text)).toEqual(listedEvents);
    for (const resource of ['refunds', 'invoices', 'subscriptions']) {
      const made = await createExport({ resource, format: 'csv' });
      await run();
      expect((await get(`/v1/exports/${made.id}`)).body.data).toMatchObject({ status: 'complete', rowCount: 0 });
      expect((await download(made.id)).text).toMatch(/^id,object,livemode,.*\r\n$/);
    }
  });

  it.each([
    [{ resource: 'payments', format: 'csv', filters: { status: 'lost' } }, 'invalid_parameter', 'filters.status'],
    [{ resource: 'payments', format: 'csv', filters: { colour: 'red' } }, 'unknown_parameter', 'filters.colour'],
    [{ resource: 'payments', format: 'csv', filters: { page: 2 } }, 'unknown_parameter', 'filters.page'],
    [{ resource: 'payments', format: 'csv', filters: { pageSize: 10 } }, 'unknown_parameter', 'filters.pageSize'],
    [{ resource: 'payments', format: 'csv', filters: { sortField: 'amount' } }, 'unknown_parameter', 'filters.sortField'],
    [{ resource: 'events', format: 'csv', filters: { createdAfter: 'yesterday' } }, 'invalid_parameter', 'filters.createdAfter'],
    [{ resource: 'refunds', format: 'jsonl', filters: { paymentId: 42 } }, 'invalid_parameter', 'filters.paymentId'],
    [{ resource: 'payments', format: 'csv', filters: 'status=failed' }, 'invalid_parameter', 'filters'],
    [{ resource: 'gateways', format: 'csv' }, 'invalid_parameter', 'resource'],
    [{ resource: 'payments', format: 'xlsx' }, 'invalid_parameter', 'format'],
    [{ format: 'csv' }, 'missing_parameter', 'resource'],
  ])('should refuse %j with 400 %s naming %s', async (body, code, param) => {
    const res = await post('/v1/exports', body);
    expect([res.status, res.body.error.code, res.body.error.param]).toEqual([400, code, param]);
  });

  it('should keep an export to its account and the permissions of its resource', async () => {
    const made = await createExport({ resource: 'payments', format: 'csv', filters: { status: 'failed' } });
    await run();
    const other: TestAccount = await app.createAccount();
    for (const p of [`/v1/exports/${made.id}`, `/v1/exports/${made.id}/file`]) {
      const res = await get(p, other.testKey);
      expect([res.status, res.body.error.code]).toEqual([404, 'resource_not_found']);
    }
    expect((await get('/v1/exports', other.testKey)).body.meta.total).toBe(0);
    // Live mode is another scope too.
    expect((await get(`/v1/exports/${made.id}`, app.account.liveKey)).status).toBe(404);

    const keyWith = async (permissions: string[]) => (await post('/v1/api-keys', { permissions })).body.data.secret as string;
    const exportsOnly = await keyWith(['exports:write']);
    expect((await get(`/v1/exports/${made.id}`, exportsOnly)).body.error).toMatchObject({ code: 'permission_denied', message: "This API key does not have the 'payments:read' permission" });
    expect((await get(`/v1/exports/${made.id}/file`, exportsOnly)).status).toBe(403);
    expect((await post('/v1/exports', { resource: 'payments', format: 'csv' }, exportsOnly)).status).toBe(403);
    // The list shows the exports of the resources the key reads.
    const customersExport = await createExport({ resource: 'customers', format: 'csv' });
    const customersReader = await keyWith(['exports:write', 'customers:read']);
    const seen = (await get('/v1/exports?pageSize=100', customersReader)).body.data.map((e: Json) => e.resource);
    expect(new Set(seen)).toEqual(new Set(['customers']));
    expect((await get(`/v1/exports/${customersExport.id}`, customersReader)).status).toBe(200);
    const paymentsOnly = await keyWith(['payments:read']);
    expect((await post('/v1/exports', { resource: 'payments', format: 'csv' }, paymentsOnly)).body.error).toMatchObject({ code: 'permission_denied', message: "This API key does not have the 'exports:write' permission" });
    // An events export of a type the key cannot read is refused by name, as the list refuses it.
    const eventsReader = await keyWith(['exports:write', 'events:read']);
    const typed = await post('/v1/exports', { resource: 'events', format: 'jsonl', filters: { type: 'payment.succeeded' } }, eventsReader);
    expect([typed.status, typed.body.error.param]).toEqual([403, 'filters.type']);
  });

  it('should hold only what the key that asked may read: an events export skips the types it cannot see', async () => {
    const eventsReader = (await post('/v1/api-keys', { permissions: ['exports:write', 'events:read', 'customers:read'] })).body.data.secret as string;
    const made = await createExport({ resource: 'events', format: 'jsonl' }, eventsReader);
    await run();
    const types = new Set(jsonl((await download(made.id, eventsReader)).text).map((e) => e.type));
    expect(types).toEqual(new Set(['customer.created']));
  });

  it('should stay the list as it was when new payments arrive between its pages', async () => {
    const expected = await listAll();
    const original = app.server.services.payments.list.bind(app.server.services.payments);
    let calls = 0;
    jest.spyOn(app.server.services.payments, 'list').mockImplementation(async (...args) => {
      if (isExportPage(args) && ++calls === 3) {
        clock.advance(1000);
        await seedPayments(10);
      }
      return original(...args);
    });
    const made = await createExport({ resource: 'payments', format: 'jsonl' });
    await run();
    expect(jsonl((await download(made.id)).text)).toEqual(expected);
  });

  it('should resume an interrupted export where its file stands, cutting off a page written but not recorded', async () => {
    const expected = await listAll();
    const pageCount = Math.floor(expected.length / PAGE) + 1;
    const original = app.server.services.payments.list.bind(app.server.services.payments);
    let calls = 0;
    const pages = jest.spyOn(app.server.services.payments, 'list').mockImplementation(async (...args) => {
      if (isExportPage(args) && ++calls === 3) throw new Error('connection reset');
      return original(...args);
    });
    const made = await createExport({ resource: 'payments', format: 'csv' });
    expect(await run()).toMatchObject({ completed: 0, released: 1 });
    const halfway = (await get(`/v1/exports/${made.id}`)).body.data;
    expect(halfway).toMatchObject({ status: 'running', rowCount: 2 * PAGE, url: null });
    expect(halfway.progress).toBeGreaterThan(0);
    expect(halfway.progress).toBeLessThan(1);
    expect((await download(made.id)).body.error.code).toBe('export_not_ready');
    // As if the process died after writing a page to disk, before recording it.
    const file = path.join(app.config.dataDir, 'exports', app.account.accountId, `${made.id}.csv`);
    fs.appendFileSync(file, 'pay_half,written\r\n');

    pages.mockClear();
    expect(await run()).toMatchObject({ completed: 1, released: 0 });
    // Only the pages not yet written, from the recorded row on.
    const resumed = exportPages(pages.mock.calls);
    expect(resumed).toHaveLength(pageCount - 2);
    expect(resumed[0].startingAfter).toBe(expected[2 * PAGE - 1].id);
    expectCsv((await download(made.id)).text, expected);
    expect((await get(`/v1/exports/${made.id}`)).body.data).toMatchObject({ status: 'complete', rowCount: expected.length, progress: 1 });
  });

  it('should leave an export whose worker holds its lease, and take it over once the lease has run out', async () => {
    const expected = await listAll('status=failed');
    const made = await createExport({ resource: 'payments', format: 'jsonl', filters: { status: 'failed' } });
    const db = app.server.services.db;
    // Another instance's worker has it, and its lease is good for an hour (on the database's clock).
    await db.execute("UPDATE exports SET status = 'running', lock_token = 'elsewhere', locked_until = $1 WHERE id = $2", [new Date(Date.now() + 3_600_000), made.id]);
    expect(await run()).toMatchObject({ completed: 0 });
    // That worker died: its lease ran out.
    await db.execute('UPDATE exports SET locked_until = $1 WHERE id = $2', [new Date(Date.now() - 1000), made.id]);
    expect(await run()).toMatchObject({ completed: 1 });
    expect(jsonl((await download(made.id)).text)).toEqual(expected);
  });

  it('should fail an export whose filters the service refuses when it runs, without retrying it', async () => {
    const made = await createExport({ resource: 'payments', format: 'csv' });
    const original = app.server.services.payments.list.bind(app.server.services.payments);
    jest.spyOn(app.server.services.payments, 'list').mockImplementation(async (...args) => {
      if (isExportPage(args)) throw new DomainError('permission_denied', 'gone');
      return original(...args);
    });
    expect(await run()).toMatchObject({ failed: 1 });
    const failed = (await get(`/v1/exports/${made.id}`)).body.data;
    expect(failed).toMatchObject({ status: 'failed', failureMessage: 'gone', url: null });
    const res = await download(made.id);
    expect([res.status, res.body.error.code]).toEqual([422, 'invalid_state']);
    expect(fs.existsSync(path.join(app.config.dataDir, 'exports', app.account.accountId, `${made.id}.csv`))).toBe(false);
  });

  it('should replay a create with the same Idempotency-Key', async () => {
    const body = { resource: 'payments', format: 'csv', filters: { status: 'failed' } };
    const first = await app.request('POST', '/v1/exports', { key, body, headers: { 'Idempotency-Key': 'export-once' } });
    const again = await app.request('POST', '/v1/exports', { key, body, headers: { 'Idempotency-Key': 'export-once' } });
    expect([first.status, again.status, again.headers['idempotent-replayed']]).toEqual([201, 201, 'true']);
    expect(again.body.data.id).toBe(first.body.data.id);
  });

  // Last: it moves the clock a day on.
  it('should refuse the file 24 hours after the export was asked for, and delete it at the next run', async () => {
    const made = await createExport({ resource: 'payments', format: 'csv', filters: { status: 'failed' } });
    const never = await createExport({ resource: 'payments', format: 'csv' });
    await app.server.services.db.execute("UPDATE exports SET status = 'running', lock_token = 'elsewhere', locked_until = $1 WHERE id = $2", [new Date(Date.now() + 3_600_000), never.id]);
    await run();
    const file = path.join(app.config.dataDir, 'exports', app.account.accountId, `${made.id}.csv`);
    clock.advance(24 * 3_600_000 - 1);
    expect((await download(made.id)).status).toBe(200);
    clock.advance(1);
    const gone = await download(made.id);
    expect([gone.status, gone.body.error.code]).toEqual([410, 'export_expired']);
    expect((await get(`/v1/exports/${made.id}`)).body.data).toMatchObject({ status: 'complete', url: null });
    expect(fs.existsSync(file)).toBe(true);
    const purged = await run();
    expect(purged.purged).toBeGreaterThanOrEqual(2);
    expect(fs.existsSync(file)).toBe(false);
    expect((await download(made.id)).status).toBe(410);
    // The one never finished is failed by its expiry.
    expect((await get(`/v1/exports/${never.id}`)).body.data).toMatchObject({ status: 'failed', failureMessage: 'The export expired before it was complete' });
  });
});
