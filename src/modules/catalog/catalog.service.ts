import type { Database } from '../../db/database';
import { NESTED_LIST_LIMIT } from '../../db/list';
import { CatalogStore, toApiPrice, toApiProduct, type Price, type Product } from './catalog.store';
import { ProductModel } from './product.model';
import { PriceModel } from './price.model';
import {
  createPriceInput, createProductInput, listPricesInput, listProductsInput, updatePriceInput, updateProductInput,
} from './catalog.inputs';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { mergeMetadata, parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { EventService } from '../events/event.service';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';

export { toApiPrice, toApiProduct, type Price, type Product } from './catalog.store';

type Row = Record<string, unknown>;

export class CatalogService {
  private readonly store: CatalogStore;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly idempotency: IdempotencyService,
  ) {
    this.store = new CatalogStore(db);
  }

  async createProduct(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<Product> {
    requirePermission(ctx, 'products', 'write');
    const data = parseInput(createProductInput, input);
    const now = ctx.clock.now();
    return this.db.transaction((transaction) => this.idempotency.once(transaction, idem, IDEMPOTENT_OPERATIONS.createProduct, async () => {
      const row = await ProductModel.create(
        {
          id: newId('prod'), accountId: ctx.accountId, mode: ctx.mode, name: data.name,
          description: data.description ?? null, active: data.active ?? true,
          metadata: JSON.stringify(data.metadata ?? {}), createdAt: now, updatedAt: now,
        },
        { transaction },
      );
      const product = toApiProduct(row.get({ plain: true }));
      await this.events.record(ctx, transaction, 'product.created', product);
      return product;
    }));
  }

  async retrieveProduct(ctx: RequestContext, id: string): Promise<Product> {
    requirePermission(ctx, 'products', 'read');
    const row = await ProductModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('product', id);
    return toApiProduct(row as unknown as Row);
  }

  async findProducts(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, Product>> {
    requirePermission(ctx, 'products', 'read');
    const rows = await ProductModel.findAll({ where: { id: [...new Set(ids)], accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    return new Map(rows.map((r) => [r.id, toApiProduct(r as unknown as Row)]));
  }

  /** Prices of several products at once (newest first), for DataLoader. */
  /** The newest prices of several products at once (at most `limit` each), for DataLoader. */
  pricesForProducts(ctx: RequestContext, productIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Price[]>> {
    requirePermission(ctx, 'prices', 'read');
    return this.store.pricesForProducts(ctx, productIds, limit);
  }

  async listProducts<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<Product, O>> {
    requirePermission(ctx, 'products', 'read');
    const input = parseInput(listProductsInput, query);
    return this.store.listProducts(ctx, input, options);
  }

  async updateProduct(ctx: RequestContext, id: string, input: unknown): Promise<Product> {
    requirePermission(ctx, 'products', 'write');
    const data = parseInput(updateProductInput, input);
    return this.db.transaction(async (transaction) => {
      // Locked: concurrent metadata patches each merge into the one before (none is lost).
      const row = await ProductModel.findOne({
        where: { id, accountId: ctx.accountId, mode: ctx.mode }, transaction, lock: this.db.rowLock(transaction),
      });
      if (!row) throw notFound('product', id);
      const current = toApiProduct(row.get({ plain: true }));
      const changes: Row = {};
      if (data.name !== undefined) changes.name = data.name;
      if (data.description !== undefined) changes.description = data.description;
      if (data.active !== undefined) changes.active = data.active;
      if (data.metadata !== undefined) changes.metadata = JSON.stringify(mergeMetadata(current.metadata, data.metadata));
      if (Object.keys(changes).length === 0) return current;
      changes.updatedAt = ctx.clock.now();
      await row.update(changes, { transaction });
      const product = toApiProduct(row.get({ plain: true }));
      await this.events.record(ctx, transaction, 'product.updated', product);
      return product;
    });
  }

  async createPrice(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<Price> {
    requirePermission(ctx, 'prices', 'write');
    const data = parseInput(createPriceInput, input);
    const now = ctx.clock.now();
    return this.db.transaction((transaction) => this.idempotency.once(transaction, idem, IDEMPOTENT_OPERATIONS.createPrice, async () => {
      const product = await ProductModel.findOne({
        where: { id: data.productId, accountId: ctx.accountId, mode: ctx.mode },
        transaction,
        raw: true,
      });
      if (!product) throw notFound('product', data.productId, 'productId');
      const row = await PriceModel.create(
        {
          id: newId('price'), accountId: ctx.accountId, mode: ctx.mode, productId: data.productId,
          unitAmount: data.unitAmount, currency: data.currency,
          recurringInterval: data.recurring?.interval ?? null,
          recurringIntervalCount: data.recurring?.intervalCount ?? null,
          nickname: data.nickname ?? null, active: data.active ?? true,
          metadata: JSON.stringify(data.metadata ?? {}), createdAt: now, updatedAt: now,
        },
        { transaction },
      );
      const price = toApiPrice(row.get({ plain: true }));
      await this.events.record(ctx, transaction, 'price.created', price);
      return price;
    }));
  }

  async retrievePrice(ctx: RequestContext, id: string): Promise<Price> {
    requirePermission(ctx, 'prices', 'read');
    const row = await PriceModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('price', id);
    return toApiPrice(row as unknown as Row);
  }

  /**
   * A price with its product's name, for another service acting on the caller's behalf (a
   * checkout session or payment link names its price); null when the account and mode have none.
   */
  async lookupPrice(ctx: RequestContext, id: string): Promise<{ price: Price; productName: string } | null> {
    const row = await PriceModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) return null;
    const product = await ProductModel.findOne({ attributes: ['name'], where: { id: row.productId, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    return { price: toApiPrice(row as unknown as Row), productName: product?.name ?? '' };
  }

  async listPrices<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<Price, O>> {
    requirePermission(ctx, 'prices', 'read');
    const input = parseInput(listPricesInput, query);
    return this.store.listPrices(ctx, input, options);
  }

  async updatePrice(ctx: RequestContext, id: string, input: unknown): Promise<Price> {
    requirePermission(ctx, 'prices', 'write');
    const data = parseInput(updatePriceInput, input);
    return this.db.transaction(async (transaction) => {
      // Locked: concurrent metadata patches each merge into the one before (none is lost).
      const row = await PriceModel.findOne({
        where: { id, accountId: ctx.accountId, mode: ctx.mode }, transaction, lock: this.db.rowLock(transaction),
      });
      if (!row) throw notFound('price', id);
      const current = toApiPrice(row.get({ plain: true }));
      const changes: Row = {};
      if (data.nickname !== undefined) changes.nickname = data.nickname;
      if (data.active !== undefined) changes.active = data.active;
      if (data.metadata !== undefined) changes.metadata = JSON.stringify(mergeMetadata(current.metadata, data.metadata));
      if (Object.keys(changes).length === 0) return current;
      changes.updatedAt = ctx.clock.now();
      await row.update(changes, { transaction });
      const price = toApiPrice(row.get({ plain: true }));
      await this.events.record(ctx, transaction, 'price.updated', price);
      return price;
    });
  }

  /** Several prices by id (GraphQL's `node` and links, batched); ids of another account or mode are not found. */
  async findPrices(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, Price>> {
    requirePermission(ctx, 'prices', 'read');
    const rows = await PriceModel.findAll({ where: { id: [...new Set(ids)], accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    return new Map(rows.map((r) => [r.id, toApiPrice(r as unknown as Row)]));
  }
}
