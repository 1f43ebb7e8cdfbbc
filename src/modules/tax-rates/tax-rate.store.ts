import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readBool, readJson } from '../../db/database';
import { Filter, listPage, modelSource } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import type { Metadata } from '../../core/validation';
import { TaxRateModel } from './tax-rate.model';
import { percentageFromE4 } from './tax-rate.inputs';

/** A tax rate as the API returns it (API.md §12). */
export interface TaxRate {
  id: string;
  object: 'tax_rate';
  livemode: boolean;
  displayName: string;
  description: string | null;
  percentage: number;
  inclusive: boolean;
  country: string | null;
  jurisdiction: string | null;
  active: boolean;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
}

/** What an invoice computes its taxes with: the rate's exact percentage (ten-thousandths). */
export interface TaxRateTerms {
  id: string;
  displayName: string;
  percentageE4: number;
  inclusive: boolean;
  active: boolean;
}

type Scope = { accountId: string; mode: string };
type Row = Record<string, unknown>;

/** Tax rates' list page and the batch read invoices compute with. */
export class TaxRateStore {
  constructor(private readonly db: Database) {}

  list<O extends ListOptions = Counted>(scope: Scope, input: ListParams<'createdAt'> & { active?: boolean; inclusive?: boolean }, options?: O): Promise<PageFor<TaxRate, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, active: input.active, inclusive: input.inclusive });
    return listPage(this.db, { ...modelSource(TaxRateModel), filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toApiTaxRate }, options);
  }

  /** The account and mode's rates among `ids` (active or not), in one statement. */
  async terms(scope: Scope, ids: readonly string[], t?: Transaction): Promise<Map<string, TaxRateTerms>> {
    if (ids.length === 0) return new Map();
    const rows = await TaxRateModel.findAll({
      attributes: ['id', 'displayName', 'percentageE4', 'inclusive', 'active'],
      where: { id: [...new Set(ids)], accountId: scope.accountId, mode: scope.mode }, raw: true, transaction: t,
    });
    return new Map(rows.map((r) => [r.id, {
      id: r.id, displayName: r.displayName, percentageE4: Number(r.percentageE4), inclusive: readBool(r.inclusive), active: readBool(r.active),
    }]));
  }
}

export function toApiTaxRate(row: Row): TaxRate {
  return {
    id: row.id as string,
    object: 'tax_rate',
    livemode: row.mode === 'live',
    displayName: row.displayName as string,
    description: (row.description as string | null) ?? null,
    percentage: percentageFromE4(Number(row.percentageE4)),
    inclusive: readBool(row.inclusive),
    country: (row.country as string | null) ?? null,
    jurisdiction: (row.jurisdiction as string | null) ?? null,
    active: readBool(row.active),
    metadata: readJson<Metadata>(row.metadata, {}),
    createdAt: isoTime(row.createdAt) as string,
    updatedAt: isoTime(row.updatedAt) as string,
  };
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'tax_rate.created': TaxRate;
    'tax_rate.updated': TaxRate;
  }
}
