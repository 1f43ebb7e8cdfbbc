import 'reflect-metadata';
import { Database } from '../../src/db/database';
import { Filter, listPage, modelSource } from '../../src/db/list';
import { DomainError } from '../../src/core/errors';
import type { ListParams } from '../../src/core/pagination';
import { CustomerModel } from '../../src/modules/customers/customer.model';
import { toCustomerRecord } from '../../src/modules/customers/customer.service';
import { DIALECT, type TestDatabase } from '../helpers/db';
import { migratedDatabase } from '../helpers/migrated-db';

let database: TestDatabase;
let db: Database;
const statements: string[] = [];

interface Probe { id: string; amount: number; label: string }
const probes: Probe[] = [];

const source = { table: 'page_probe', columns: 'id, amount, label' };
const sortColumns = { amount: 'amount', label: 'label' };
const toApi = (row: Record<string, unknown>): Probe => ({ id: row.id as string, amount: Number(row.amount), label: row.label as string });
const params = (p: Partial<ListParams<'amount' | 'label'>> = {}): ListParams<'amount' | 'label'> => ({
  page: 1, pageSize: 4, sortField: 'amount', sortDirection: 'desc', ...p,
});

beforeAll(async () => {
  ({ database, db } = await migratedDatabase((sql) => statements.push(sql)));
  await db.execute('CREATE TABLE page_probe (id VARCHAR(16) PRIMARY KEY, account_id VARCHAR(16) NOT NULL, amount INTEGER NOT NULL, label VARCHAR(40) NOT NULL)');
  // 30 rows over three amounts and three labels, so every sort value is shared by many rows and
  // ties straddle page boundaries; inserted in an order unrelated to their ids, so an order that
  // relies on the table's physical order does not come out by id.
  for (let i = 0; i < 30; i++) {
    const n = (i * 17) % 30;
    probes.push({ id: `p${String(n).padStart(3, '0')}`, amount: (n * 7) % 3, label: ['gold', 'iron', 'zinc'][(n * 11) % 3] });
  }
  for (const p of probes) {
    await db.execute('INSERT INTO page_probe (id, account_id, amount, label) VALUES ($1, $2, $3, $4)', [p.id, 'acct_a', p.amount, p.label]);
  }
  await db.execute('INSERT INTO page_probe (id, account_id, amount, label) VALUES ($1, $2, $3, $4)', ['q001', 'acct_b', 5, `O'Brien`]);
  await db.execute('INSERT INTO page_probe (id, account_id, amount, label) VALUES ($1, $2, $3, $4)', ['q002', 'acct_b', 5, '100% off']);
  await db.execute('INSERT INTO page_probe (id, account_id, amount, label) VALUES ($1, $2, $3, $4)', ['q003', 'acct_b', 5, '1000 off']);
  await db.execute('INSERT INTO page_probe (id, account_id, amount, label) VALUES ($1, $2, $3, $4)', ['q004', 'acct_b', 5, 'O Brien']);
});
afterAll(async () => {
  await db.close();
  await database.drop();
});

/** Every page of account a's probes, read until an empty page. */
async function walk(sortField: 'amount' | 'label', sortDirection: 'asc' | 'desc'): Promise<string[]> {
  const seen: string[] = [];
  for (let page = 1; ; page++) {
    const result = await listPage(db, { ...source, filter: new Filter({ account_id: 'acct_a' }), params: params({ page, sortField, sortDirection }), sortColumns, toApi });
    expect(result).toMatchObject({ total: probes.length, page, pageSize: 4 });
    if (result.data.length === 0) return seen;
    expect(result.data.length).toBe(Math.min(4, probes.length - seen.length));
    seen.push(...result.data.map((p) => p.id));
  }
}

describe(`listPage on ${DIALECT}`, () => {
  for (const sortField of ['amount', 'label'] as const) {
    for (const sortDirection of ['asc', 'desc'] as const) {
      it(`should break ${sortField} ties by id (${sortDirection}) so pages neither overlap nor skip rows`, async () => {
        const sign = sortDirection === 'asc' ? 1 : -1;
        const expected = [...probes]
          .sort((a, b) => sign * (a[sortField] < b[sortField] ? -1 : a[sortField] > b[sortField] ? 1 : a.id < b.id ? -1 : 1))
          .map((p) => p.id);
        expect(await walk(sortField, sortDirection)).toEqual(expected);
      });
    }
  }

  it('should bind filter values, so quotes and wildcards match literally', async () => {
    const list = (filter: Filter) => listPage(db, { ...source, filter, params: params({ pageSize: 10 }), sortColumns, toApi });
    statements.length = 0;
    const quoted = await list(new Filter({ account_id: 'acct_b', label: `O'Brien` }));
    expect(quoted.data.map((p) => p.id)).toEqual(['q001']);
    expect(quoted.total).toBe(1);
    const percent = await list(new Filter({ account_id: 'acct_b' }).search(['label'], '100%'));
    expect(percent.data.map((p) => p.label)).toEqual(['100% off']);
    expect(percent.total).toBe(1);
    const underscore = await list(new Filter({ account_id: 'acct_b' }).search(['label'], 'o_brien'));
    expect(underscore.total).toBe(0);
    expect(statements.join('\n')).not.toMatch(/O'Brien|100%|acct_b/);
  });

  it('should bind the paging values, so every page of one filter shape is one statement', async () => {
    statements.length = 0;
    for (const page of [1, 2, 7]) {
      await listPage(db, { ...source, filter: new Filter({ account_id: 'acct_a' }), params: params({ page }), sortColumns, toApi });
    }
    const texts = new Set(statements.map((s) => s.replace(/^Executing \([^)]*\): /, '')));
    expect(texts.size).toBe(2); // the page and its count
  });

  it('should refuse a sortField outside the whitelist before any SQL runs', async () => {
    for (const sortField of ['created_at', 'amount; DROP TABLE page_probe', 'constructor', '__proto__']) {
      statements.length = 0;
      const attempt = listPage(db, {
        ...source, filter: new Filter({ account_id: 'acct_a' }), params: params({ sortField: sortField as 'amount' }), sortColumns, toApi,
      });
      await expect(attempt).rejects.toBeInstanceOf(DomainError);
      await expect(attempt).rejects.toMatchObject({ code: 'invalid_parameter', param: 'sortField', status: 400 });
      expect(statements).toEqual([]);
    }
  });

  it("should read a model's table under the model's attribute names, as its mapper expects", async () => {
    const at = new Date('2024-05-01T10:00:00.123Z');
    for (const [i, email] of ['ann@example.com', 'bob@example.com', 'cy@example.com'].entries()) {
      await CustomerModel.create({
        id: `cus_${i}`, accountId: 'acct_m', mode: 'test', email, emailNormalized: email, name: `N${i}`, country: 'DE', phone: null,
        defaultPaymentMethodId: `pm_${i}`, testClockId: null, metadata: JSON.stringify({ n: String(i) }), createdAt: at, updatedAt: at,
      });
    }
    const result = await listPage(db, {
      ...modelSource(CustomerModel), filter: new Filter({ account_id: 'acct_m', mode: 'test' }),
      params: { page: 1, pageSize: 2, sortField: 'createdAt', sortDirection: 'asc' }, sortColumns: { createdAt: 'created_at' }, toApi: toCustomerRecord,
    });
    const viaModel = await CustomerModel.findAll({ where: { accountId: 'acct_m' }, order: [['id', 'ASC']], limit: 2, raw: true });
    expect(result).toEqual({ data: viaModel.map((r) => toCustomerRecord(r as unknown as Record<string, unknown>)), total: 3, page: 1, pageSize: 2, hasMore: true });
    expect(result.data[0]).toMatchObject({ id: 'cus_0', defaultPaymentMethodId: 'pm_0', createdAt: at.toISOString(), metadata: { n: '0' } });
  });
});
