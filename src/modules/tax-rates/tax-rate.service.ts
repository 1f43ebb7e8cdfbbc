import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { mergeMetadata, parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { EventService } from '../events/event.service';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import { TaxRateModel } from './tax-rate.model';
import { createTaxRateInput, listTaxRatesInput, updateTaxRateInput } from './tax-rate.inputs';
import { TaxRateStore, toApiTaxRate, type TaxRate, type TaxRateTerms } from './tax-rate.store';

export { toApiTaxRate, type TaxRate, type TaxRateTerms } from './tax-rate.store';

type Scope = { accountId: string; mode: string };
type Row = Record<string, unknown>;

/**
 * Tax rates (API.md §12): created, listed, renamed and (de)activated; the percentage and whether
 * it is inclusive never change, so an invoice computed with a rate stays true to it. Invoices and
 * subscriptions name rates by id; `usable` checks those they are given.
 */
export class TaxRateService {
  private readonly store: TaxRateStore;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly idempotency: IdempotencyService,
  ) {
    this.store = new TaxRateStore(db);
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<TaxRate> {
    requirePermission(ctx, 'tax_rates', 'write');
    const data = parseInput(createTaxRateInput, input);
    const now = ctx.clock.now();
    return this.db.transaction((transaction) => this.idempotency.once(transaction, idem, IDEMPOTENT_OPERATIONS.createTaxRate, async () => {
      const row = await TaxRateModel.create({
        id: newId('txr'), accountId: ctx.accountId, mode: ctx.mode, displayName: data.displayName, description: data.description ?? null,
        percentageE4: data.percentage, inclusive: data.inclusive, country: data.country ?? null, jurisdiction: data.jurisdiction ?? null,
        active: data.active ?? true, metadata: JSON.stringify(data.metadata ?? {}), createdAt: now, updatedAt: now,
      }, { transaction });
      const rate = toApiTaxRate(row.get({ plain: true }));
      await this.events.record(ctx, transaction, 'tax_rate.created', rate);
      return rate;
    }));
  }

  async retrieve(ctx: RequestContext, id: string): Promise<TaxRate> {
    requirePermission(ctx, 'tax_rates', 'read');
    const row = await TaxRateModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('tax rate', id);
    return toApiTaxRate(row as unknown as Row);
  }

  /** Batch lookup for DataLoader (needs tax_rates:read); unknown ids are simply absent. */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, TaxRate>> {
    requirePermission(ctx, 'tax_rates', 'read');
    const rows = await TaxRateModel.findAll({ where: { id: [...new Set(ids)], accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    return new Map(rows.map((r) => [r.id, toApiTaxRate(r as unknown as Row)]));
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<TaxRate, O>> {
    requirePermission(ctx, 'tax_rates', 'read');
    return this.store.list(ctx, parseInput(listTaxRatesInput, query), options);
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<TaxRate> {
    requirePermission(ctx, 'tax_rates', 'write');
    const data = parseInput(updateTaxRateInput, input);
    return this.db.transaction(async (transaction) => {
      // Locked: concurrent metadata patches each merge into the one before (none is lost).
      const row = await TaxRateModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, transaction, lock: this.db.rowLock(transaction) });
      if (!row) throw notFound('tax rate', id);
      const current = toApiTaxRate(row.get({ plain: true }));
      const changes: Row = {};
      if (data.displayName !== undefined) changes.displayName = data.displayName;
      if (data.description !== undefined) changes.description = data.description;
      if (data.active !== undefined) changes.active = data.active;
      if (data.metadata !== undefined) changes.metadata = JSON.stringify(mergeMetadata(current.metadata, data.metadata));
      if (Object.keys(changes).length === 0) return current;
      changes.updatedAt = ctx.clock.now();
      await row.update(changes, { transaction });
      const rate = toApiTaxRate(row.get({ plain: true }));
      await this.events.record(ctx, transaction, 'tax_rate.updated', rate);
      return rate;
    });
  }

  /**
   * The rates `lists` name, for an invoice or subscription being given them (no permission
   * asked: the caller's own write is the permission): each must be the account and mode's and
   * active, else 400 naming the list's `param` (`lineItems[2].taxRateIds`).
   */
  async usable(scope: Scope, lists: ReadonlyArray<{ ids: readonly string[]; param: string }>, t?: Transaction): Promise<Map<string, TaxRateTerms>> {
    const found = await this.store.terms(scope, lists.flatMap((l) => l.ids), t);
    for (const { ids, param } of lists) {
      for (const id of ids) {
        const rate = found.get(id);
        if (!rate) throw new DomainError('invalid_parameter', `No tax rate '${id}' in this account and mode`, param);
        if (!rate.active) throw new DomainError('invalid_parameter', `Tax rate '${id}' is inactive: it cannot be put on new invoices or subscriptions`, param);
      }
    }
    return found;
  }

  /** The rates among `ids` as they are, active or not (a subscription keeps billing with a rate deactivated since it was set). */
  terms(scope: Scope, ids: readonly string[], t?: Transaction): Promise<Map<string, TaxRateTerms>> {
    return this.store.terms(scope, ids, t);
  }
}
