import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readBool, readJson } from '../../db/database';
import { Filter, groupBy, listPage, modelSource, newestPerParent } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import type { Metadata } from '../../core/validation';
import { InvoiceLineItemModel, InvoiceModel } from './invoice.model';
import { INVOICE_MOVES } from './invoice-states';
import type { INVOICE_PAYMENT_STATUSES } from './invoice.inputs';
import type { TaxBreakdownEntry, TaxExempt } from './invoice-tax';
import type { InvoiceParties } from './invoice-document';

type Scope = { accountId: string; mode: string };
type Row = Record<string, unknown>;

export interface InvoiceLineItem {
  id: string;
  description: string;
  quantity: number;
  unitAmount: number;
  amount: number;
  periodStart: string | null;
  periodEnd: string | null;
  proration: boolean;
  /** The line's own tax rates (none: the invoice's `defaultTaxRateIds` apply). */
  taxRateIds: string[];
}

/** An invoice as stored (the API object adds `hostedUrl`). */
export interface InvoiceRecord {
  id: string;
  accountId: string;
  mode: 'test' | 'live';
  livemode: boolean;
  number: string;
  customerId: string;
  subscriptionId: string | null;
  status: 'draft' | 'sent' | 'paid' | 'void';
  paymentStatus: (typeof INVOICE_PAYMENT_STATUSES)[number];
  currency: string;
  lineItems: InvoiceLineItem[];
  subtotal: number;
  total: number;
  amountPaid: number;
  amountDue: number;
  /** What the invoice took from the customer's credit balance (CustomerCredit.applyToInvoice). */
  creditApplied: number;
  /** The exclusive taxes; `total` = `subtotal` + `tax`. */
  tax: number;
  taxBreakdown: TaxBreakdownEntry[];
  defaultTaxRateIds: string[];
  /** The customer's `taxExempt` the taxes were computed with. */
  customerTaxExempt: TaxExempt;
  dueDate: string | null;
  memo: string | null;
  sentAt: string | null;
  paidAt: string | null;
  voidedAt: string | null;
  paidOutOfBand: boolean;
  emailStatus: 'queued' | 'sent' | 'failed' | null;
  latestPaymentId: string | null;
  paymentAttempts: number;
  metadata: Metadata;
  /** The seller and the buyer as the invoice left `draft` (internal; null on a draft and on invoices issued before it was kept). */
  parties: InvoiceParties | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * Invoices' statements: the number sequence, pages with their line items (one statement for the
 * lines of a whole page), and the charges the reconciling job finishes.
 */
/**
 * `paymentStatus: requires_action` as the column holds it: `payment_status` is 12 characters wide
 * (migration 0013), so the store writes and reads this shorter word and no one else sees it.
 */
const REQUIRES_ACTION_STORED = 'needs_action';

/** The payment statuses of an invoice whose charge is out (its payment not ended yet, as the invoice last knew it). */
const CHARGE_OUT = `('processing', '${REQUIRES_ACTION_STORED}')`;

export class InvoiceStore {
  constructor(private readonly db: Database) {}

  /**
   * The next invoice number of the account and mode, in the caller's transaction: one upsert that
   * increments the sequence row and returns it. The row stays locked until the transaction ends,
   * so concurrent creates take numbers one after another, and a rollback gives the number back:
   * no gap, no duplicate.
   */
  async nextNumber(t: Transaction, scope: Scope, now: Date): Promise<number> {
    return this.nextNumbers(t, scope, 1, now);
  }

  /**
   * `count` consecutive numbers of the account and mode at once (a billing batch), in the
   * caller's transaction: one upsert moving the sequence on by `count`; returns the first. Locked
   * and given back on rollback as `nextNumber`: no gap, no duplicate.
   */
  async nextNumbers(t: Transaction, scope: Scope, count: number, now: Date): Promise<number> {
    const [row] = await this.db.select<{ last_number: number | string }>(
      `INSERT INTO invoice_number_sequences (account_id, mode, last_number, updated_at) VALUES ($1, $2, $4, $3)
        ON CONFLICT (account_id, mode) DO UPDATE SET last_number = invoice_number_sequences.last_number + $4, updated_at = $3
        RETURNING last_number`,
      [scope.accountId, scope.mode, now, count],
      t,
    );
    return Number(row.last_number) - count + 1;
  }

  /** Several invoices by id with their lines (in the caller's transaction): two statements. */
  async findManyIn(ids: readonly string[], t?: Transaction): Promise<Map<string, InvoiceRecord>> {
    if (ids.length === 0) return new Map();
    const rows = await InvoiceModel.findAll({ where: { id: [...new Set(ids)] }, raw: true, transaction: t });
    const lines = await this.linesFor(rows.map((r) => r.id), t);
    return new Map(rows.map((r) => [r.id, toInvoiceRecord(r as unknown as Row, lines.get(r.id) ?? [])]));
  }

  /**
   * Claims several invoices' charges at once (the billing run's batch), as `InvoiceService.charge`
   * claims one: only an invoice neither paid nor void, not processing and with something due is
   * set processing, its attempt counted and its payment named. Returns those claimed with their
   * attempt and what they are due as claimed. One statement on PostgreSQL; one each on SQLite,
   * together in one transaction (one commit, not one per invoice).
   * `touched` is the service's time (what an invoice's grace for a charge that died is measured from).
   */
  async claimCharges(rows: Array<{ id: string; paymentId: string }>, touched: Date): Promise<Map<string, { attempt: number; amountDue: number }>> {
    if (rows.length === 0) return new Map();
    if (this.db.dialect === 'sqlite') return this.db.transaction((t) => this.claimChargesIn(t, rows, touched));
    return this.claimChargesIn(undefined, rows, touched);
  }

  private async claimChargesIn(t: Transaction | undefined, rows: Array<{ id: string; paymentId: string }>, touched: Date): Promise<Map<string, { attempt: number; amountDue: number }>> {
    // What InvoiceService.charge checks on the row it locks (unqualified: no column of the batch's values shares these names).
    // A charge waiting for the customer's authentication is still out: never a second one beside it.
    const where = `status IN ('draft', 'sent') AND payment_status NOT IN ${CHARGE_OUT} AND amount_due > 0`;
    if (this.db.dialect === 'postgres') {
      const claimed = await this.db.select<{ id: string; payment_attempts: number | string; amount_due: number | string }>(
        `UPDATE invoices i SET payment_status = 'processing', payment_attempts = i.payment_attempts + 1, latest_payment_id = v.payment_id, updated_at = $2
           FROM json_to_recordset($1::json) AS v(id text, payment_id text)
          WHERE i.id = v.id AND ${where}
          RETURNING i.id, i.payment_attempts, i.amount_due`,
        [this.db.jsonParam(rows.map((r) => ({ id: r.id, payment_id: r.paymentId }))), touched],
        t,
      );
      return new Map(claimed.map((r) => [r.id, { attempt: Number(r.payment_attempts), amountDue: Number(r.amount_due) }]));
    }
    const claimed = new Map<string, { attempt: number; amountDue: number }>();
    for (const r of rows) {
      const [row] = await this.db.select<{ payment_attempts: number | string; amount_due: number | string }>(
        `UPDATE invoices SET payment_status = 'processing', payment_attempts = payment_attempts + 1, latest_payment_id = $2, updated_at = $3
          WHERE id = $1 AND ${where} RETURNING payment_attempts, amount_due`,
        [r.id, r.paymentId, touched],
        t,
      );
      if (row) claimed.set(r.id, { attempt: Number(row.payment_attempts), amountDue: Number(row.amount_due) });
    }
    return claimed;
  }

  /**
   * Drafts whose charge (`paymentId`, still processing) succeeded, finalised: `sent` (the first
   * half of `InvoiceService.settleCharge` for them). Returns the ids it changed.
   */
  async markChargedSent(t: Transaction, rows: Array<{ id: string; paymentId: string; parties: InvoiceParties | null }>, now: Date, touched: Date): Promise<string[]> {
    if (rows.length === 0) return [];
    // Each row's parties (the snapshot an issued invoice keeps) written by the same statement.
    const parties = (r: { parties: InvoiceParties | null }) => (r.parties ? JSON.stringify(r.parties) : null);
    if (this.db.dialect === 'postgres') {
      const done = await this.db.select<{ id: string }>(
        `UPDATE invoices i SET ${INVOICE_MOVES.sqlSet('finalize', '$2')}, parties = COALESCE(v.parties, i.parties), updated_at = $3
           FROM json_to_recordset($1::json) AS v(id text, payment_id text, parties text)
          WHERE i.id = v.id AND i.latest_payment_id = v.payment_id AND i.payment_status IN ${CHARGE_OUT} AND ${INVOICE_MOVES.sqlFrom('finalize', 'i.status')}
          RETURNING i.id`,
        [this.db.jsonParam(rows.map((r) => ({ id: r.id, payment_id: r.paymentId, parties: parties(r) }))), now, touched],
        t,
      );
      return done.map((r) => r.id);
    }
    const done: string[] = [];
    for (const r of rows) {
      const changed = await this.db.execute(
        `UPDATE invoices SET ${INVOICE_MOVES.sqlSet('finalize', '$3')}, parties = COALESCE($5, parties), updated_at = $4
          WHERE id = $1 AND latest_payment_id = $2 AND payment_status IN ${CHARGE_OUT} AND ${INVOICE_MOVES.sqlFrom('finalize')}`,
        [r.id, r.paymentId, now, touched, parties(r)],
        t,
      );
      if (changed > 0) done.push(r.id);
    }
    return done;
  }

  /**
   * Invoices whose charge (`paymentId`, still processing) succeeded for `amount`, paid (the
   * second half of `InvoiceService.settleCharge`). Returns the ids it changed.
   */
  async markChargedPaid(t: Transaction, rows: Array<{ id: string; paymentId: string; amount: number }>, now: Date, touched: Date): Promise<string[]> {
    if (rows.length === 0) return [];
    if (this.db.dialect === 'postgres') {
      const done = await this.db.select<{ id: string }>(
        `UPDATE invoices i SET ${INVOICE_MOVES.sqlSet('pay', '$2')}, payment_status = 'paid', latest_payment_id = v.payment_id,
                amount_paid = i.amount_paid + v.amount, amount_due = GREATEST(0, i.amount_due - v.amount), updated_at = $3
           FROM json_to_recordset($1::json) AS v(id text, payment_id text, amount bigint)
          WHERE i.id = v.id AND i.latest_payment_id = v.payment_id AND i.payment_status IN ${CHARGE_OUT} AND ${INVOICE_MOVES.sqlFrom('pay', 'i.status')}
          RETURNING i.id`,
        [this.db.jsonParam(rows.map((r) => ({ id: r.id, payment_id: r.paymentId, amount: r.amount }))), now, touched],
        t,
      );
      return done.map((r) => r.id);
    }
    const done: string[] = [];
    for (const r of rows) {
      const changed = await this.db.execute(
        `UPDATE invoices SET ${INVOICE_MOVES.sqlSet('pay', '$4')}, payment_status = 'paid', latest_payment_id = $2,
                amount_paid = amount_paid + $3, amount_due = MAX(0, amount_due - $3), updated_at = $5
          WHERE id = $1 AND latest_payment_id = $2 AND payment_status IN ${CHARGE_OUT} AND ${INVOICE_MOVES.sqlFrom('pay')}`,
        [r.id, r.paymentId, r.amount, now, touched],
        t,
      );
      if (changed > 0) done.push(r.id);
    }
    return done;
  }

  async find(id: string, scope?: Scope, t?: Transaction, lock = false): Promise<InvoiceRecord | null> {
    const where: Row = { id };
    if (scope) Object.assign(where, { accountId: scope.accountId, mode: scope.mode });
    const row = await InvoiceModel.findOne({ where, raw: true, transaction: t, lock: lock ? this.db.rowLock(t) : undefined });
    if (!row) return null;
    const lines = await this.linesFor([id], t);
    return toInvoiceRecord(row as unknown as Row, lines.get(id) ?? []);
  }

  async findMany(scope: Scope, ids: readonly string[]): Promise<InvoiceRecord[]> {
    const rows = await InvoiceModel.findAll({ where: { id: [...new Set(ids)], accountId: scope.accountId, mode: scope.mode }, raw: true });
    const lines = await this.linesFor(rows.map((r) => r.id));
    return rows.map((r) => toInvoiceRecord(r as unknown as Row, lines.get(r.id) ?? []));
  }

  async list<O extends ListOptions = Counted>(
    scope: Scope,
    input: ListParams<'createdAt' | 'total' | 'amount'> & { customerId?: string; subscriptionId?: string; status?: readonly string[] },
    options?: O,
  ): Promise<PageFor<InvoiceRecord, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, customer_id: input.customerId, subscription_id: input.subscriptionId }).anyOf('status', input.status);
    const page = await listPage(this.db, {
      ...modelSource(InvoiceModel), filter, params: input, sortColumns: { createdAt: 'created_at', total: 'total', amount: 'total' }, toApi: (row: Row) => row,
    }, options);
    const lines = await this.linesFor(page.data.map((r) => r.id as string));
    return { ...page, data: page.data.map((r) => toInvoiceRecord(r, lines.get(r.id as string) ?? [])) } as PageFor<InvoiceRecord, O>;
  }

  /** The newest invoices of several customers (at most `limit` each), for DataLoader. */
  async forCustomers(scope: Scope, customerIds: readonly string[], limit: number): Promise<Map<string, InvoiceRecord[]>> {
    const rows = await newestPerParent<Row>(this.db, {
      columns: `${modelSource(InvoiceModel).columns}, created_at`, from: 'invoices', parentColumn: 'customer_id', accountId: scope.accountId, mode: scope.mode, parentIds: customerIds, limit,
    });
    const lines = await this.linesFor(rows.map((r) => r.id as string));
    return groupBy(rows.map((r) => toInvoiceRecord(r, lines.get(r.id as string) ?? [])), (i) => i.customerId);
  }

  /** The newest invoices of several subscriptions (at most `limit` each), for DataLoader. */
  async forSubscriptions(scope: Scope, subscriptionIds: readonly string[], limit: number): Promise<Map<string, InvoiceRecord[]>> {
    const rows = await newestPerParent<Row>(this.db, {
      columns: `${modelSource(InvoiceModel).columns}, created_at`, from: 'invoices', parentColumn: 'subscription_id', accountId: scope.accountId, mode: scope.mode, parentIds: subscriptionIds, limit,
    });
    const lines = await this.linesFor(rows.map((r) => r.id as string));
    return groupBy(rows.map((r) => toInvoiceRecord(r, lines.get(r.id as string) ?? [])), (i) => i.subscriptionId as string);
  }

  /** The line items of several invoices, in their order: one statement however many invoices. */
  async linesFor(ids: readonly string[], t?: Transaction): Promise<Map<string, InvoiceLineItem[]>> {
    if (ids.length === 0) return new Map();
    const rows = await InvoiceLineItemModel.findAll({ where: { invoiceId: [...new Set(ids)] }, order: [['invoiceId', 'ASC'], ['position', 'ASC']], raw: true, transaction: t });
    const grouped = groupBy(rows as unknown as Row[], (r) => r.invoiceId as string);
    return new Map([...grouped].map(([id, lines]) => [id, lines.map(toLineItem)]));
  }

  /**
   * Invoices whose charge's request ended before it settled them, and invoices waiting for the
   * customer's authentication whose payment has since ended (the reconciling job's batch).
   */
  async processing(before: Date, limit: number): Promise<Array<{ id: string; accountId: string; mode: 'test' | 'live' }>> {
    return this.db.select(
      // A charge still pending, under review, or (taken already) waiting for the customer waits for
      // its payment: left out, or it would head every batch.
      `SELECT id, account_id AS "accountId", mode FROM invoices i WHERE payment_status IN ${CHARGE_OUT} AND updated_at < $1
        AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.id = i.latest_payment_id
                         AND (p.status IN ('pending', 'requires_review') OR (p.status = 'requires_action' AND i.payment_status = '${REQUIRES_ACTION_STORED}')))
        ORDER BY updated_at LIMIT $2`,
      [before, limit],
    );
  }

  /** Which of these invoices are drafts keeping no parties yet, with their customer (whose parties a finalising statement keeps): one statement. */
  async draftsOf(ids: readonly string[], t?: Transaction): Promise<Array<{ id: string; accountId: string; mode: 'test' | 'live'; customerId: string }>> {
    if (ids.length === 0) return [];
    return (await InvoiceModel.findAll({
      attributes: ['id', 'accountId', 'mode', 'customerId'], where: { id: [...new Set(ids)], status: 'draft', parties: null }, raw: true, transaction: t,
    })) as unknown as Array<{ id: string; accountId: string; mode: 'test' | 'live'; customerId: string }>;
  }

  /**
   * The invoice's charge (`paymentId`, still processing) waits for the customer's authentication:
   * `requires_action`, in the caller's transaction. False when the invoice no longer waits for that payment.
   */
  async markRequiresAction(t: Transaction, id: string, paymentId: string, touched: Date): Promise<boolean> {
    const changed = await this.db.execute(
      `UPDATE invoices SET payment_status = '${REQUIRES_ACTION_STORED}', updated_at = $3 WHERE id = $1 AND latest_payment_id = $2 AND payment_status = 'processing'`,
      [id, paymentId, touched],
      t,
    );
    return changed > 0;
  }

  /** A payment's status by id (the invoice's charge), or null when it was never written. */
  async paymentStatus(paymentId: string, t?: Transaction): Promise<string | null> {
    const [row] = await this.db.select<{ status: string }>('SELECT status FROM payments WHERE id = $1', [paymentId], t);
    return row?.status ?? null;
  }
}

function toLineItem(row: Row): InvoiceLineItem {
  return {
    id: row.id as string,
    description: row.description as string,
    quantity: Number(row.quantity),
    unitAmount: Number(row.unitAmount),
    amount: Number(row.amount),
    periodStart: isoTime(row.periodStart),
    periodEnd: isoTime(row.periodEnd),
    proration: readBool(row.proration),
    taxRateIds: readJson<string[]>(row.taxRateIds, []),
  };
}

export function toInvoiceRecord(row: Row, lineItems: InvoiceLineItem[]): InvoiceRecord {
  return {
    id: row.id as string,
    accountId: row.accountId as string,
    mode: row.mode as 'test' | 'live',
    livemode: row.mode === 'live',
    number: row.number as string,
    customerId: row.customerId as string,
    subscriptionId: (row.subscriptionId as string | null) ?? null,
    status: row.status as InvoiceRecord['status'],
    paymentStatus: row.paymentStatus === REQUIRES_ACTION_STORED ? 'requires_action' : row.paymentStatus as InvoiceRecord['paymentStatus'],
    currency: row.currency as string,
    lineItems,
    subtotal: Number(row.subtotal),
    total: Number(row.total),
    amountPaid: Number(row.amountPaid),
    amountDue: Number(row.amountDue),
    creditApplied: Number(row.creditApplied ?? 0),
    tax: Number(row.tax ?? 0),
    taxBreakdown: readJson<TaxBreakdownEntry[]>(row.taxBreakdown, []),
    defaultTaxRateIds: readJson<string[]>(row.defaultTaxRateIds, []),
    customerTaxExempt: (row.customerTaxExempt as TaxExempt | null) ?? 'none',
    dueDate: isoTime(row.dueDate),
    memo: (row.memo as string | null) ?? null,
    sentAt: isoTime(row.sentAt),
    paidAt: isoTime(row.paidAt),
    voidedAt: isoTime(row.voidedAt),
    paidOutOfBand: readBool(row.paidOutOfBand),
    emailStatus: (row.emailStatus as InvoiceRecord['emailStatus']) ?? null,
    latestPaymentId: (row.latestPaymentId as string | null) ?? null,
    paymentAttempts: Number(row.paymentAttempts ?? 0),
    metadata: readJson<Metadata>(row.metadata, {}),
    parties: readJson<InvoiceParties | null>(row.parties, null),
    createdAt: isoTime(row.createdAt) as string,
    updatedAt: isoTime(row.updatedAt) as string,
  };
}
