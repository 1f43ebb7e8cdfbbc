import type { Database } from '../../db/database';
import { isoTime, readBool, readJson } from '../../db/database';
import { Filter, NESTED_LIST_LIMIT, groupBy, listPage, modelSource, newestPerParent } from '../../db/list';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { Metadata } from '../../core/validation';
import { PriceModel } from './price.model';
import { ProductModel } from './product.model';

export interface Product {
  id: string;
  object: 'product';
  livemode: boolean;
  name: string;
  description: string | null;
  active: boolean;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
}

export interface Price {
  id: string;
  object: 'price';
  livemode: boolean;
  productId: string;
  unitAmount: number;
  currency: string;
  type: 'one_time' | 'recurring';
  recurring: { interval: string; intervalCount: number } | null;
  nickname: string | null;
  active: boolean;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
}

type Row = Record<string, unknown>;

/** Price columns under the model's attribute names (what toApiPrice reads), plus created_at and id for ordering. */
const PRICE_NESTED_COLUMNS =
  'id, mode, product_id AS "productId", unit_amount AS "unitAmount", currency, recurring_interval AS "recurringInterval", ' +
  'recurring_interval_count AS "recurringIntervalCount", nickname, active, metadata, created_at, created_at AS "createdAt", updated_at AS "updatedAt"';

type Scope = { accountId: string; mode: string };
type ListInput = { page: number; pageSize: number; sortDirection: 'asc' | 'desc' };

/** The catalog's list pages and nested price lists (ordinary reads and writes go through the models). */
export class CatalogStore {
  constructor(private readonly db: Database) {}

  listProducts<O extends ListOptions = Counted>(scope: Scope, input: ListInput & { sortField: 'createdAt' | 'name'; active?: boolean; search?: string }, options?: O): Promise<PageFor<Product, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, active: input.active }).search(['name', 'description'], input.search);
    return listPage(this.db, {
      ...modelSource(ProductModel), filter, params: input, sortColumns: { createdAt: 'created_at', name: 'name' }, toApi: toApiProduct,
    }, options);
  }

  listPrices<O extends ListOptions = Counted>(
    scope: Scope,
    input: ListInput & { sortField: 'createdAt' | 'unitAmount' | 'amount'; productId?: string; active?: boolean; currency?: string; type?: ReadonlyArray<'one_time' | 'recurring'> },
    options?: O,
  ): Promise<PageFor<Price, O>> {
    const filter = new Filter({
      account_id: scope.accountId, mode: scope.mode, product_id: input.productId || undefined, active: input.active, currency: input.currency || undefined,
    });
    // Both types: every price.
    if (input.type?.length === 1) filter.raw(() => (input.type?.[0] === 'recurring' ? 'recurring_interval IS NOT NULL' : 'recurring_interval IS NULL'));
    return listPage(this.db, {
      ...modelSource(PriceModel), filter, params: input,
      sortColumns: { createdAt: 'created_at', unitAmount: 'unit_amount', amount: 'unit_amount' }, toApi: toApiPrice,
    }, options);
  }

  /** The newest prices of several products at once (at most `limit` each). */
  async pricesForProducts(scope: Scope, productIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Price[]>> {
    const rows = await newestPerParent<Row>(this.db, {
      columns: PRICE_NESTED_COLUMNS, from: 'prices', parentColumn: 'product_id', accountId: scope.accountId, mode: scope.mode, parentIds: productIds, limit,
    });
    return groupBy(rows.map(toApiPrice), (price) => price.productId);
  }
}

export function toApiProduct(row: Row): Product {
  return {
    id: row.id as string,
    object: 'product',
    livemode: row.mode === 'live',
    name: row.name as string,
    description: (row.description as string | null) ?? null,
    active: readBool(row.active),
    metadata: readJson<Metadata>(row.metadata, {}),
    createdAt: isoTime(row.createdAt) as string,
    updatedAt: isoTime(row.updatedAt) as string,
  };
}

export function toApiPrice(row: Row): Price {
  const interval = (row.recurringInterval as string | null) ?? null;
  return {
    id: row.id as string,
    object: 'price',
    livemode: row.mode === 'live',
    productId: row.productId as string,
    unitAmount: Number(row.unitAmount),
    currency: row.currency as string,
    type: interval ? 'recurring' : 'one_time',
    recurring: interval ? { interval, intervalCount: Number(row.recurringIntervalCount ?? 1) } : null,
    nickname: (row.nickname as string | null) ?? null,
    active: readBool(row.active),
    metadata: readJson<Metadata>(row.metadata, {}),
    createdAt: isoTime(row.createdAt) as string,
    updatedAt: isoTime(row.updatedAt) as string,
  };
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'product.created': Product;
    'product.updated': Product;
    'price.created': Price;
    'price.updated': Price;
  }
}
