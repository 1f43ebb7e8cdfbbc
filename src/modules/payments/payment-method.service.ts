import type { Database } from '../../db/database';
import { isoTime } from '../../db/database';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import { NESTED_LIST_LIMIT, groupBy } from '../../db/list';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { parseInput } from '../../core/validation';
import { type Counted, type ListOptions, type PageFor } from '../../core/pagination';
import type { ChargeRequest } from '../../connectors/connector';
import { BUILTIN_SIMULATOR_ID, type GatewayConfigService } from '../gateways/gateway-config.service';
import type { RoutingService } from '../routing/routing.service';
import { toCustomerRecord, type CustomerService } from '../customers/customer.service';
import { CustomerModel } from '../customers/customer.model';
import { PaymentMethodModel } from './payment-method.model';
import type { EventService } from '../events/event.service';
import { describeCard } from '../../core/card';
import { listPaymentMethodsInput, savePaymentMethodInput } from './payment.inputs';
import type { z } from 'zod';
import type { Transaction } from 'sequelize';
import { isUniqueViolation } from '../../db/list';
import type { SaveCardResult } from '../../connectors/connector';

export { listPaymentMethodsInput } from './payment.inputs';
import type { PaymentMethodDetails } from './payment.types';
import type { GatewayTransactionStore } from './gateway-transaction.store';
import { PaymentMethodStore, type PaymentMethodRow } from './payment-method.store';

type SavePaymentMethodInput = z.output<typeof savePaymentMethodInput>;

/** A card saved at a gateway, not yet recorded: its id, where it is, its token and the call's log entry. */
interface GatewayCard {
  id: string;
  gatewayId: string;
  token: string;
  details: ReturnType<typeof describeCard>;
  call: { kind: 'save_card'; gatewayId: string; gatewayType: string; attempt: number; idempotencyKey: string; result: SaveCardResult };
}

const customerExists = () => new DomainError(
  'customer_exists',
  'This e-mail address belongs to an existing customer of the merchant: ask the merchant for a link to your account',
  'email',
);

export interface SavedPaymentMethod {
  id: string;
  object: 'payment_method';
  livemode: boolean;
  customerId: string;
  gatewayId: string;
  type: 'card';
  card: { brand: string; last4: string; expMonth: number; expYear: number; fingerprint: string };
  isDefault: boolean;
  createdAt: string;
  updatedAt: string;
}

/** Cards saved with a gateway (its token is kept, never the number) and charged later. */
export class PaymentMethodService {
  private readonly store: PaymentMethodStore;

  constructor(
    private readonly db: Database,
    private readonly customers: CustomerService,
    private readonly gateways: GatewayConfigService,
    private readonly routing: RoutingService,
    private readonly events: EventService,
    private readonly gtx: GatewayTransactionStore,
    private readonly idempotency: IdempotencyService,
    private readonly fingerprintKey: Buffer,
  ) {
    this.store = new PaymentMethodStore(db);
  }

  /**
   * Saves the card at a gateway, then records it. The Idempotency-Key is claimed and answered
   * with the record, so a crash before it leaves the key free (and at most an unused token at
   * the gateway); a key already answered is replayed before the gateway is asked again.
   */
  async save(ctx: RequestContext, customerId: string, input: unknown, idem?: IdempotencyKey): Promise<SavedPaymentMethod> {
    requirePermission(ctx, 'customers', 'write');
    const data = parseInput(savePaymentMethodInput, input);
    const customer = await this.customers.retrieve(ctx, customerId);
    await this.idempotency.replayIfAnswered(idem);
    const card = await this.saveAtGateway(ctx, data, customer.country);
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.savePaymentMethod, () => this.record(ctx, t, customerId, card, data.setDefault)));
  }

  /**
   * A hosted page's anonymous payer: the card is saved at a gateway first, and only then are the
   * customer (with this e-mail) and the card, as its default, written together. A declined card
   * leaves no customer behind; an e-mail that is already a customer's is refused before any
   * gateway is asked (422 `customer_exists`), and again by the unique index if one was made
   * meanwhile, the card then recorded nowhere.
   */
  async saveForNewCustomer(ctx: RequestContext, payer: { email: string; name: string | null }, input: unknown): Promise<SavedPaymentMethod> {
    requirePermission(ctx, 'customers', 'write');
    const data = parseInput(savePaymentMethodInput, input);
    if (await this.customers.emailTaken(ctx, payer.email)) throw customerExists();
    const card = await this.saveAtGateway(ctx, data, null);
    try {
      return await this.db.transaction(async (t) => {
        const customer = await this.customers.insert(ctx, t, { email: payer.email, name: payer.name });
        return this.record(ctx, t, customer.id, card, true);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw customerExists();
      throw err;
    }
  }

  /** The gateway's half of a save: where the card goes (routing), and its token there. */
  private async saveAtGateway(ctx: RequestContext, data: SavePaymentMethodInput, country: string | null): Promise<GatewayCard> {
    let gatewayId = data.gatewayId;
    if (gatewayId) {
      // Only a live, enabled gateway of this account (the built-in simulator in test mode only).
      const usable = gatewayId === BUILTIN_SIMULATOR_ID ? ctx.mode === 'test' : (await this.gateways.routable(ctx)).some((g) => g.id === gatewayId && g.enabled);
      if (!usable) throw new DomainError('invalid_parameter', `Gateway '${gatewayId}' cannot save cards for this account`, 'gatewayId');
    } else {
      // Where a payment in `currency` (USD unless given) would go first. Without a currency, an
      // account none of whose gateways takes USD still saves cards: on its first enabled gateway
      // (in test mode too, rather than on the built-in simulator routing falls back to).
      const decision = await this.routing.decide(ctx, { amount: 100, currency: data.currency ?? 'USD', country, cardBrand: null });
      gatewayId = decision.gateways[0];
      if ((!gatewayId || decision.usesBuiltinSimulator) && data.currency === undefined) {
        gatewayId = (await this.gateways.routable(ctx)).find((g) => g.enabled)?.id ?? gatewayId;
      }
      if (!gatewayId) {
        throw new DomainError('no_gateway_available', `No enabled gateway can save a card for ${data.currency ?? 'this account'}`, data.currency ? 'currency' : undefined);
      }
    }
    const { gateway, type } = await this.gateways.connector(ctx, gatewayId);
    const id = newId('pm');
    const details = describeCard(data.card, this.fingerprintKey);
    const result = await gateway.saveCard({
      idempotencyKey: `${id}_save`,
      card: { number: data.card.number, expMonth: data.card.expMonth, expYear: data.card.expYear, cvc: data.card.cvc },
    });
    const call = { kind: 'save_card' as const, gatewayId, gatewayType: type, attempt: 1, idempotencyKey: `${id}_save`, result };
    if (result.outcome !== 'succeeded' || !result.token) {
      // The call is on record whatever it answered; nothing else is written.
      await this.db.transaction((t) => this.gtx.insert(ctx, t, {}, [call]));
      // The card's answer is the card's (422); a gateway that could not answer is not the
      // request's fault (503: try again, the Idempotency-Key is freed).
      if (result.outcome === 'declined') {
        throw new DomainError('card_declined', `The card could not be saved: ${result.message ?? 'declined'} (${result.declineCode ?? 'card_declined'})`, 'card');
      }
      throw new DomainError('gateway_unavailable', `Gateway '${gatewayId}' could not save the card just now; try again`);
    }
    return { id, gatewayId, token: result.token, details, call };
  }

  /** The record's half of a save, in the caller's transaction: the card, its gateway call, and the customer's default if it becomes one. */
  private async record(ctx: RequestContext, t: Transaction, customerId: string, card: GatewayCard, setDefault: boolean | undefined): Promise<SavedPaymentMethod> {
    const now = ctx.clock.now();
    // The customer's default is read under its row lock: of first cards saved at once, exactly
    // one becomes the default, and the event carries the customer as this save leaves it.
    const locked = await CustomerModel.findOne({
      where: { id: customerId, accountId: ctx.accountId, mode: ctx.mode },
      transaction: t,
      lock: this.db.rowLock(t),
      raw: true,
    });
    if (!locked) throw notFound('customer', customerId);
    const current = toCustomerRecord(locked as unknown as Record<string, unknown>);
    const makeDefault = setDefault ?? current.defaultPaymentMethodId === null;
    const { details } = card;
    const saved = await PaymentMethodModel.create({
      id: card.id, accountId: ctx.accountId, mode: ctx.mode, customerId, gatewayId: card.gatewayId, gatewayToken: card.token,
      brand: details.brand, last4: details.last4, expMonth: details.expMonth, expYear: details.expYear, fingerprint: details.fingerprint,
      createdAt: now, updatedAt: now,
    }, { transaction: t });
    await this.gtx.insert(ctx, t, {}, [card.call]);
    if (makeDefault) {
      await CustomerModel.update({ defaultPaymentMethodId: card.id, updatedAt: now }, { where: { id: customerId }, transaction: t });
      const [customer] = await this.customers.withCredit(ctx, [{ ...current, defaultPaymentMethodId: card.id, updatedAt: now.toISOString() }], t);
      await this.events.record(ctx, t, 'customer.updated', customer);
    }
    return toApi(rowOf(saved.get({ plain: true })), makeDefault ? card.id : current.defaultPaymentMethodId);
  }

  async retrieve(ctx: RequestContext, customerId: string, id: string): Promise<SavedPaymentMethod> {
    const row = await PaymentMethodModel.findOne({ where: { id, customerId, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('payment method', id);
    const customer = await this.customers.retrieve(ctx, customerId);
    return toApi(rowOf(row), customer.defaultPaymentMethodId);
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, customerId: string, query: unknown, options?: O): Promise<PageFor<SavedPaymentMethod, O>> {
    requirePermission(ctx, 'customers', 'read');
    const input = parseInput(listPaymentMethodsInput, query);
    const customer = await this.customers.retrieve(ctx, customerId);
    return this.store.list(ctx, customerId, input, (row) => toApi(row, customer.defaultPaymentMethodId), options);
  }

  /** The newest saved cards of several customers (at most `limit` each) in one query, for DataLoader. */
  async forCustomers(ctx: RequestContext, customerIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, SavedPaymentMethod[]>> {
    requirePermission(ctx, 'customers', 'read');
    const rows = await this.store.forCustomers(ctx, customerIds, limit);
    return groupBy(rows.map((row) => toApi(row, row.default_payment_method_id)), (m) => m.customerId);
  }

  /** A saved method as a charge source, bound to the gateway that holds its token. */
  async resolve(ctx: RequestContext, id: string): Promise<ResolvedPaymentMethod | null> {
    const row = await this.store.find(ctx, id);
    return row ? resolved(row) : null;
  }

  /** `resolve` for several ids of one account and mode, in one statement (concurrent charges share it). */
  async resolveMany(scope: { accountId: string; mode: string }, ids: readonly string[]): Promise<Map<string, ResolvedPaymentMethod>> {
    return new Map((await this.store.findMany(scope, ids)).map((row) => [row.id, resolved(row)]));
  }

  async defaultFor(ctx: RequestContext, customerId: string) {
    const defaultId = await this.store.defaultIdFor(ctx, customerId);
    return defaultId ? this.resolve(ctx, defaultId) : null;
  }

  /**
   * Several saved cards by id (GraphQL's `node`, `Customer.defaultPaymentMethod`,
   * `BillingSubscription.defaultPaymentMethod`, batched), read as a customer's list reads them
   * (customers:read); ids of another account or mode are not found.
   */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, SavedPaymentMethod>> {
    requirePermission(ctx, 'customers', 'read');
    const rows = await this.store.findManyWithDefault(ctx, ids);
    return new Map(rows.map((row) => [row.id, toApi(row, row.default_payment_method_id)]));
  }
}

/** A saved method as a charge uses it: the gateway's token, the card's details, its gateway and customer. */
export interface ResolvedPaymentMethod {
  source: ChargeRequest['source'];
  details: PaymentMethodDetails;
  restrictTo: string;
  customerId: string;
}

function resolved(row: PaymentMethodRow): ResolvedPaymentMethod {
  return {
    source: { kind: 'token', token: row.gateway_token },
    details: { type: 'card', brand: row.brand, last4: row.last4, expMonth: Number(row.exp_month), expYear: Number(row.exp_year), fingerprint: row.fingerprint },
    restrictTo: row.gateway_id,
    customerId: row.customer_id,
  };
}

/** A model's attributes in the column names the list statements return. */
function rowOf(m: Pick<PaymentMethodModel, 'id' | 'mode' | 'customerId' | 'gatewayId' | 'gatewayToken' | 'brand' | 'last4' | 'expMonth' | 'expYear' | 'fingerprint' | 'createdAt' | 'updatedAt'>): PaymentMethodRow {
  return {
    id: m.id, mode: m.mode, customer_id: m.customerId, gateway_id: m.gatewayId, gateway_token: m.gatewayToken, brand: m.brand, last4: m.last4,
    exp_month: m.expMonth, exp_year: m.expYear, fingerprint: m.fingerprint, created_at: m.createdAt, updated_at: m.updatedAt,
  };
}

function toApi(row: PaymentMethodRow, defaultId: string | null): SavedPaymentMethod {
  return {
    id: row.id,
    object: 'payment_method',
    livemode: row.mode === 'live',
    customerId: row.customer_id,
    gatewayId: row.gateway_id,
    type: 'card',
    card: { brand: row.brand, last4: row.last4, expMonth: Number(row.exp_month), expYear: Number(row.exp_year), fingerprint: row.fingerprint },
    isDefault: row.id === defaultId,
    createdAt: isoTime(row.created_at) as string,
    updatedAt: isoTime(row.updated_at) as string,
  };
}
