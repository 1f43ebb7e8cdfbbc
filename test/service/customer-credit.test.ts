import type { Transaction } from 'sequelize';
import type { RequestContext } from '../../src/core/context';
import type { Customer } from '../../src/modules/customers/customer.service';
import { DIALECT } from '../helpers/db';
import { refusal, startServices, type ServiceHarness } from '../helpers/services';

let h: ServiceHarness;
let ctx: RequestContext;
beforeAll(async () => {
  h = await startServices();
  ctx = (await h.account()).test;
});
afterAll(() => h?.stop());

const unique = () => `c${Math.random().toString(36).slice(2, 10)}@example.com`;
const invoiceId = () => `in_${Math.random().toString(36).slice(2, 14)}`;
let tick = 0;
/** The clock a second on, so each write has its own time (the lists' order). */
const later = (): Date => {
  const at = new Date(Date.parse('2026-11-05T08:00:00.000Z') + ++tick * 1000);
  h.clock.set(at);
  return at;
};

const credit = () => h.services.customerCredit;
const inTransaction = <T>(fn: (t: Transaction) => Promise<T>) => h.services.db.transaction(fn);
const balanceOf = async (c: RequestContext, id: string) => (await h.services.customers.retrieve(c, id)).creditBalance;
const transactionsOf = async (c: RequestContext, id: string) => (await credit().list(c, id, { pageSize: 100 })).data;
const updatedEvents = async (c: RequestContext, id: string) =>
  (await h.services.events.list(c, { type: 'customer.updated', objectId: id, pageSize: 100 }, undefined, { byObject: true })).data;

async function newCustomer(c: RequestContext = ctx): Promise<Customer> {
  later();
  return h.services.customers.create(c, { email: unique() });
}

describe('CustomerCredit.creditFromInvoice', () => {
  it('should add the credit, write one invoice_credit transaction and record customer.updated with the new balance, once per invoice', async () => {
    const customer = await newCustomer();
    const inv = invoiceId();
    const at = later();
    await inTransaction((t) => credit().creditFromInvoice(t, ctx, { customerId: customer.id, currency: 'eur', invoiceId: inv, amount: 1500, description: 'Credit from INV-000042' }));
    expect(await balanceOf(ctx, customer.id)).toEqual({ EUR: 1500 });
    expect(await transactionsOf(ctx, customer.id)).toEqual([{
      id: expect.stringMatching(/^cbtxn_[0-9A-Za-z]{20,}$/), object: 'balance_transaction', livemode: false, customerId: customer.id, currency: 'EUR',
      amount: 1500, type: 'invoice_credit', invoiceId: inv, description: 'Credit from INV-000042', createdAt: at.toISOString(), updatedAt: at.toISOString(),
    }]);
    const events = await updatedEvents(ctx, customer.id);
    expect(events).toHaveLength(1);
    expect(events[0].data.object).toEqual({ ...customer, creditBalance: { EUR: 1500 }, updatedAt: at.toISOString() });
    expect(await h.services.customers.retrieve(ctx, customer.id)).toEqual(events[0].data.object);

    // The same invoice again (a retried billing step): nothing more.
    later();
    await inTransaction((t) => credit().creditFromInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: inv, amount: 1500 }));
    expect(await balanceOf(ctx, customer.id)).toEqual({ EUR: 1500 });
    expect(await transactionsOf(ctx, customer.id)).toHaveLength(1);
    expect(await updatedEvents(ctx, customer.id)).toHaveLength(1);
  });

  it('should write nothing inside a transaction that rolls back, and credit the invoice when it is done again', async () => {
    const customer = await newCustomer();
    const inv = invoiceId();
    await expect(inTransaction(async (t) => {
      await credit().creditFromInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: inv, amount: 700 });
      throw new Error('the invoice write failed');
    })).rejects.toThrow('the invoice write failed');
    expect(await balanceOf(ctx, customer.id)).toEqual({});
    expect(await transactionsOf(ctx, customer.id)).toEqual([]);
    expect(await updatedEvents(ctx, customer.id)).toEqual([]);
    expect((await h.services.customers.retrieve(ctx, customer.id)).updatedAt).toBe(customer.updatedAt);

    await inTransaction((t) => credit().creditFromInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: inv, amount: 700 }));
    expect(await balanceOf(ctx, customer.id)).toEqual({ EUR: 700 });
  });

  it('should refuse a customer of another mode (rolling the caller back) and an amount that is not a positive integer', async () => {
    const customer = await newCustomer();
    await expect(inTransaction((t) => credit().creditFromInvoice(t, { ...ctx, mode: 'live' }, { customerId: customer.id, currency: 'EUR', invoiceId: invoiceId(), amount: 100 })))
      .rejects.toMatchObject({ code: 'resource_not_found' });
    for (const amount of [0, -5, 1.5]) {
      await expect(inTransaction((t) => credit().creditFromInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: invoiceId(), amount }))).rejects.toThrow(/amount must be an integer > 0/);
    }
    expect(await balanceOf(ctx, customer.id)).toEqual({});
    expect(await balanceOf({ ...ctx, mode: 'live' }, customer.id).catch((e: { code: string }) => e.code)).toBe('resource_not_found');
  });
});

describe('CustomerCredit.applyToInvoice', () => {
  async function customerWithCredit(amount: number, currency = 'EUR'): Promise<Customer> {
    const customer = await newCustomer();
    later();
    await inTransaction((t) => credit().creditFromInvoice(t, ctx, { customerId: customer.id, currency, invoiceId: invoiceId(), amount }));
    return customer;
  }

  it('should apply min(balance, due): a part of the credit, then what is left, then nothing', async () => {
    const customer = await customerWithCredit(1500);
    const first = invoiceId();
    const at = later();
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: first, amountDue: 1000 }))).toBe(1000);
    expect(await balanceOf(ctx, customer.id)).toEqual({ EUR: 500 });
    const [applied] = await transactionsOf(ctx, customer.id);
    expect(applied).toMatchObject({ amount: -1000, type: 'applied_to_invoice', invoiceId: first, currency: 'EUR', description: null, createdAt: at.toISOString() });
    const events = await updatedEvents(ctx, customer.id);
    expect(events[0].data.object).toMatchObject({ id: customer.id, creditBalance: { EUR: 500 }, updatedAt: at.toISOString() });

    // More due than is left: the rest of the credit, and the balance shows none.
    const second = invoiceId();
    later();
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'eur', invoiceId: second, amountDue: 2000 }))).toBe(500);
    expect(await balanceOf(ctx, customer.id)).toEqual({});
    expect((await updatedEvents(ctx, customer.id))[0].data.object).toMatchObject({ creditBalance: {} });

    // Nothing left: nothing applied, nothing written.
    const before = { txns: (await transactionsOf(ctx, customer.id)).length, events: (await updatedEvents(ctx, customer.id)).length };
    later();
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: invoiceId(), amountDue: 300 }))).toBe(0);
    expect({ txns: (await transactionsOf(ctx, customer.id)).length, events: (await updatedEvents(ctx, customer.id)).length }).toEqual(before);
    expect(await transactionsOf(ctx, customer.id)).toEqual([
      expect.objectContaining({ amount: -500, invoiceId: second }),
      expect.objectContaining({ amount: -1000, invoiceId: first }),
      expect.objectContaining({ amount: 1500, type: 'invoice_credit' }),
    ]);
  });

  it('should apply nothing more for an invoice that already took credit, answering what it took', async () => {
    const customer = await customerWithCredit(5000);
    const inv = invoiceId();
    later();
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: inv, amountDue: 1200 }))).toBe(1200);
    const events = (await updatedEvents(ctx, customer.id)).length;
    later();
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: inv, amountDue: 1200 }))).toBe(1200);
    expect(await balanceOf(ctx, customer.id)).toEqual({ EUR: 3800 });
    expect((await transactionsOf(ctx, customer.id)).filter((x) => x.invoiceId === inv)).toHaveLength(1);
    expect(await updatedEvents(ctx, customer.id)).toHaveLength(events);
  });

  it('should leave nothing behind inside a transaction that rolls back, so the invoice takes its credit when done again', async () => {
    const customer = await customerWithCredit(800);
    const inv = invoiceId();
    const events = (await updatedEvents(ctx, customer.id)).length;
    await expect(inTransaction(async (t) => {
      expect(await credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: inv, amountDue: 500 })).toBe(500);
      throw new Error('crash before the invoice was written');
    })).rejects.toThrow('crash before');
    expect(await balanceOf(ctx, customer.id)).toEqual({ EUR: 800 });
    expect(await transactionsOf(ctx, customer.id)).toHaveLength(1);
    expect(await updatedEvents(ctx, customer.id)).toHaveLength(events);
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: inv, amountDue: 500 }))).toBe(500);
    expect(await balanceOf(ctx, customer.id)).toEqual({ EUR: 300 });
  });

  it('should take credit only in the invoice currency, and only of the customer in the caller\'s account and mode', async () => {
    const customer = await customerWithCredit(900, 'USD');
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: invoiceId(), amountDue: 500 }))).toBe(0);
    expect(await inTransaction((t) => credit().applyToInvoice(t, { ...ctx, mode: 'live' }, { customerId: customer.id, currency: 'USD', invoiceId: invoiceId(), amountDue: 500 }))).toBe(0);
    const other = (await h.account()).test;
    expect(await inTransaction((t) => credit().applyToInvoice(t, other, { customerId: customer.id, currency: 'USD', invoiceId: invoiceId(), amountDue: 500 }))).toBe(0);
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'USD', invoiceId: invoiceId(), amountDue: 0 }))).toBe(0);
    expect(await balanceOf(ctx, customer.id)).toEqual({ USD: 900 });
    await expect(inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'USD', invoiceId: invoiceId(), amountDue: -1 }))).rejects.toThrow(/amountDue must be an integer/);
  });

  it('should let concurrent invoices together take no more than the balance, and the same invoice take it once', async () => {
    const customer = await customerWithCredit(1000);
    later();
    const applied = await Promise.all(Array.from({ length: 6 }, () => inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: invoiceId(), amountDue: 300 }))));
    expect(applied.reduce((a, b) => a + b, 0)).toBe(1000);
    expect([...applied].sort((a, b) => a - b)).toEqual([0, 0, 100, 300, 300, 300]);
    expect(await balanceOf(ctx, customer.id)).toEqual({});

    const again = await customerWithCredit(1000);
    const inv = invoiceId();
    const same = await Promise.all(Array.from({ length: 4 }, () => inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: again.id, currency: 'EUR', invoiceId: inv, amountDue: 400 }))));
    expect(same).toEqual([400, 400, 400, 400]);
    expect(await balanceOf(ctx, again.id)).toEqual({ EUR: 600 });
    expect((await transactionsOf(ctx, again.id)).filter((x) => x.invoiceId === inv)).toHaveLength(1);
  });

  it(`should refuse a second application row of an invoice in the database itself (${DIALECT} unique index)`, async () => {
    const customer = await customerWithCredit(100);
    const inv = invoiceId();
    expect(await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: customer.id, currency: 'EUR', invoiceId: inv, amountDue: 50 }))).toBe(50);
    const insert = (id: string, type: string) => h.services.db.execute(
      `INSERT INTO customer_balance_transactions (id, account_id, mode, customer_id, currency, amount, type, invoice_id, description, created_at)
       VALUES ($1, $2, 'test', $3, 'EUR', -50, $4, $5, NULL, $6)`,
      [id, ctx.accountId, customer.id, type, inv, new Date()],
    );
    await expect(insert('cbtxn_dup1', 'applied_to_invoice')).rejects.toThrow();
    // The invoice may still credit once (another type), and adjustments (no invoice) are many.
    await insert('cbtxn_dup2', 'invoice_credit');
    await expect(insert('cbtxn_dup3', 'invoice_credit')).rejects.toThrow();
  });
});

describe('CustomerCredit.balancesOf', () => {
  it('should read a page of customers in one statement, only amounts above 0, {} for those without credit', async () => {
    const a = await newCustomer();
    const b = await newCustomer();
    const c = await newCustomer();
    await inTransaction(async (t) => {
      await credit().creditFromInvoice(t, ctx, { customerId: a.id, currency: 'EUR', invoiceId: invoiceId(), amount: 10 });
      await credit().creditFromInvoice(t, ctx, { customerId: a.id, currency: 'JPY', invoiceId: invoiceId(), amount: 300 });
      await credit().creditFromInvoice(t, ctx, { customerId: b.id, currency: 'USD', invoiceId: invoiceId(), amount: 5 });
    });
    await inTransaction((t) => credit().applyToInvoice(t, ctx, { customerId: b.id, currency: 'USD', invoiceId: invoiceId(), amountDue: 5 }));
    const statements: string[] = [];
    const db = h.services.db;
    const select = db.select.bind(db);
    const spy = jest.spyOn(db, 'select').mockImplementation(((sql: string, bind?: unknown[], t?: never) => {
      statements.push(sql);
      return select(sql, bind, t);
    }) as never);
    let got: Map<string, Record<string, number>>;
    try {
      got = await credit().balancesOf(ctx, [a.id, b.id, c.id, 'cus_unknown']);
    } finally {
      spy.mockRestore();
    }
    expect(statements).toHaveLength(1);
    expect(Object.fromEntries(got)).toEqual({ [a.id]: { EUR: 10, JPY: 300 }, [b.id]: {}, [c.id]: {}, cus_unknown: {} });
    expect(Object.fromEntries(await credit().balancesOf({ ...ctx, mode: 'live' }, [a.id]))).toEqual({ [a.id]: {} });
    expect(await refusal(credit().list({ ...ctx, mode: 'live' }, a.id, {}))).toEqual({ code: 'resource_not_found', param: 'id', status: 404 });
  });
});
