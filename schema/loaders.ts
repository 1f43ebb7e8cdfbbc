import DataLoader from 'dataloader';
import { execute, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { RequestContext } from '../src/core/context';
import type { Services } from '../src/services';
import type { CustomerRecord } from '../src/modules/customers/customer.service';
import type { BalanceTransaction } from '../src/modules/customers/customer-credit';
import type { CheckoutSession } from '../src/modules/checkout/checkout-session.service';
import type { PaymentLink } from '../src/modules/checkout/payment-link.service';
import type { Invoice } from '../src/modules/invoices/invoice.service';
import type { Subscription } from '../src/modules/subscriptions/subscription.service';
import type { Price, Product } from '../src/modules/catalog/catalog.service';
import type { Payment } from '../src/modules/payments/payment.service';
import type { Refund } from '../src/modules/payments/refund.service';
import type { SavedPaymentMethod } from '../src/modules/payments/payment-method.service';
import type { GatewayTransaction } from '../src/modules/payments/gateway-transaction.store';
import type { WebhookAttempt } from '../src/modules/webhooks/webhook.store';
import type { ListOptions, Page } from '../src/core/pagination';
import type { TaxRate } from '../src/modules/tax-rates/tax-rate.store';
import type { GatewayView } from '../src/modules/gateways/gateway-config.service';
import type { WebhookEndpoint } from '../src/modules/webhooks/endpoint.service';
import type { TestClock } from '../src/modules/subscriptions/test-clock.service';
import type { ApiKeyView } from '../src/modules/accounts/account.service';
import type { ApiEvent } from '../src/modules/events/event.store';

/**
 * One set per request, so batching and caching never cross accounts or modes. Subscriptions
 * live for hours: their loaders batch but do not cache (objects change, memory must not grow).
 */
export function createLoaders(services: Services, rc: RequestContext, options: { cache?: boolean } = {}) {
  const cache = options.cache ?? true;
  const byIds = <T>(find: (ids: readonly string[]) => Promise<Map<string, T>>) =>
    new DataLoader<string, T | null>(async (ids) => {
      const found = await find(ids);
      return ids.map((id) => found.get(id) ?? null);
    }, { cache });
  /** Each parent's children (an empty list for none), from one batched lookup. */
  const byParent = <T>(find: (ids: readonly string[]) => Promise<Map<string, T[]>>) =>
    new DataLoader<string, T[]>(async (ids) => {
      const found = await find(ids);
      return ids.map((id) => found.get(id) ?? []);
    }, { cache });
  /**
   * Each parent's newest `limit` children (older than the child `after`, where the list takes a
   * cursor). One statement takes one limit and cursor, so there is one loader per pair asked for
   * (at most NESTED_LIST_MAX limits): parents asking the same still share a statement.
   */
  const byParentUpTo = <T>(find: (ids: readonly string[], limit: number, after?: string) => Promise<Map<string, T[]>>) => {
    const perArgs = new Map<string, DataLoader<string, T[]>>();
    return {
      load(parentId: string, limit: number, after?: string): Promise<T[]> {
        const key = after === undefined ? String(limit) : `${limit} ${after}`;
        let loader = perArgs.get(key);
        if (!loader) {
          loader = byParent((ids) => find(ids, limit, after));
          perArgs.set(key, loader);
        }
        return loader.load(parentId);
      },
      clearAll(): void {
        for (const loader of perArgs.values()) loader.clearAll();
      },
    };
  };
  /**
   * Each parent's page of a paged list. One statement takes one set of list arguments, so there
   * is one loader per set asked for (and per "count the total or not"): parents asked with the
   * same arguments share a statement.
   */
  const pageByParent = <T>(find: (ids: readonly string[], query: Record<string, unknown>, options: ListOptions) => Promise<Map<string, Page<T, number | null>>>) => {
    const perQuery = new Map<string, DataLoader<string, Page<T, number | null>>>();
    return {
      load(parentId: string, query: Record<string, unknown>, options: { countTotal: boolean }): Promise<Page<T, number | null>> {
        const key = JSON.stringify([query, options.countTotal]);
        let loader = perQuery.get(key);
        if (!loader) {
          loader = new DataLoader<string, Page<T, number | null>>(async (ids) => {
            const found = await find(ids, query, options);
            return ids.map((id) => found.get(id) as Page<T, number | null>);
          }, { cache });
          perQuery.set(key, loader);
        }
        return loader.load(parentId);
      },
      clearAll(): void {
        for (const loader of perQuery.values()) loader.clearAll();
      },
    };
  };
  /**
   * Each customer's newest balance transactions, `limit` of them, older than `after` when given:
   * one loader per pair asked for, as byParentUpTo has one per limit.
   */
  const balanceTransactionsUpTo = () => {
    const perArgs = new Map<string, DataLoader<string, BalanceTransaction[]>>();
    return {
      load(customerId: string, limit: number, after: string | undefined): Promise<BalanceTransaction[]> {
        const key = JSON.stringify([limit, after ?? null]);
        let loader = perArgs.get(key);
        if (!loader) {
          loader = byParent((ids) => services.customerCredit.forCustomers(rc, ids, limit, after));
          perArgs.set(key, loader);
        }
        return loader.load(customerId);
      },
      clearAll(): void {
        for (const loader of perArgs.values()) loader.clearAll();
      },
    };
  };
  return {
    customer: byIds<CustomerRecord>((ids) => services.customers.findMany(rc, ids)),
    creditBalance: byIds<Record<string, number>>((ids) => services.customerCredit.balancesOf(rc, ids)),
    balanceTransactionsByCustomer: balanceTransactionsUpTo(),
    checkoutSession: byIds<CheckoutSession>((ids) => services.checkoutSessions.findMany(rc, ids)),
    paymentLink: byIds<PaymentLink>((ids) => services.paymentLinks.findMany(rc, ids)),
    product: byIds<Product>((ids) => services.catalog.findProducts(rc, ids)),
    paymentsByCustomer: byParentUpTo<Payment>((ids, limit, after) => services.payments.forCustomers(rc, ids, limit, after)),
    paymentsByInvoice: byParentUpTo<Payment>((ids, limit) => services.payments.forInvoices(rc, ids, limit)),
    invoicesByCustomer: byParentUpTo<Invoice>((ids, limit) => services.invoices.forCustomers(rc, ids, limit)),
    invoicesBySubscription: byParentUpTo<Invoice>((ids, limit) => services.invoices.forSubscriptions(rc, ids, limit)),
    subscriptionsByCustomer: byParentUpTo<Subscription>((ids, limit) => services.subscriptions.forCustomers(rc, ids, limit)),
    refundsByPayment: byParentUpTo<Refund>((ids, limit, after) => services.refunds.forPayments(rc, ids, limit, after)),
    paymentMethodsByCustomer: byParentUpTo<SavedPaymentMethod>((ids, limit) => services.paymentMethods.forCustomers(rc, ids, limit)),
    gatewayTransactionsByPayment: byParentUpTo<GatewayTransaction>((ids, limit) => services.payments.gatewayTransactionsFor(rc, ids, limit)),
    pricesByProduct: byParentUpTo<Price>((ids, limit) => services.catalog.pricesForProducts(rc, ids, limit)),
    deliveriesByEndpoint: pageByParent<WebhookAttempt>((ids, query, options) => services.webhooks.deliveries.attemptsFor(rc, ids, query, options)),
    // By id, for `node`/`nodes` (schema/node.resolver.ts) and the links between objects (schema/links.resolver.ts).
    payment: byIds<Payment>((ids) => services.payments.findMany(rc, ids)),
    refund: byIds<Refund>((ids) => services.refunds.findMany(rc, ids)),
    price: byIds<Price>((ids) => services.catalog.findPrices(rc, ids)),
    invoice: byIds<Invoice>((ids) => services.invoices.findMany(rc, ids)),
    subscription: byIds<Subscription>((ids) => services.subscriptions.findMany(rc, ids)),
    taxRate: byIds<TaxRate>((ids) => services.taxRates.findMany(rc, ids)),
    gateway: byIds<GatewayView>((ids) => services.gateways.findMany(rc, ids)),
    paymentMethod: byIds<SavedPaymentMethod>((ids) => services.paymentMethods.findMany(rc, ids)),
    // An event the key may not read comes back as its refusal (an Error): DataLoader rejects that id's load with it.
    event: byIds<ApiEvent>((ids) => services.events.findMany(rc, ids) as Promise<Map<string, ApiEvent>>),
    webhookEndpoint: byIds<WebhookEndpoint>((ids) => services.webhooks.endpoints.findMany(rc, ids)),
    webhookAttempt: byIds<WebhookAttempt>((ids) => services.webhooks.deliveries.findAttempts(rc, ids)),
    testClock: byIds<TestClock>((ids) => services.testClocks.findMany(rc, ids)),
    apiKey: byIds<ApiKeyView>((ids) => services.accounts.findKeys(rc, ids)),
    gatewayTransaction: byIds<GatewayTransaction>((ids) => services.payments.findGatewayTransactions(rc, ids)),
    balanceTransaction: byIds<BalanceTransaction>((ids) => services.customerCredit.findMany(rc, ids)),
    paymentsBySubscription: byParentUpTo<Payment>((ids, limit) => services.payments.forSubscriptions(rc, ids, limit)),
    gatewayTransactionsBySubscription: byParentUpTo<GatewayTransaction>((ids, limit) => services.payments.gatewayTransactionsForSubscriptions(rc, ids, limit)),
    deliveriesByEvent: byParentUpTo<WebhookAttempt>((ids, limit) => services.webhooks.deliveries.attemptsForEvents(rc, ids, limit)),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;

/**
 * Forgets everything loaded so far. A document's mutations run one after another, and each may
 * change what an earlier one's fields read (a refund changes its payment's refunds): each starts
 * with nothing cached, so what it returns is read after the mutations before it.
 */
export function clearLoaders(loaders: Loaders): void {
  for (const loader of Object.values(loaders)) loader.clearAll();
}

/** How long an event's loaders stay after its last subscriber ran it: one slower to take it still finds them. */
const EVENT_LOADERS_LINGER_MS = 1000;

/**
 * Loaders per event delivered to subscriptions, shared by every subscriber of one account and
 * mode, with the same permissions, that the event is delivered to: `paymentUpdated { customer
 * refunds }` open 50 times reads the payment's customer and refunds in one statement each, not 50.
 * A set is made when the first subscriber runs the event and dropped EVENT_LOADERS_LINGER_MS
 * after the last one has (it caches: what the first read is what all see, as the event's own
 * object is). Subscribers of other accounts, modes or permissions never share a set: they are
 * keyed apart, and the set's services act with the group's scope and permissions.
 */
export class EventLoaders {
  private readonly sets = new Map<string, { loaders: Loaders; running: number; linger?: NodeJS.Timeout }>();

  constructor(private readonly services: Services, private readonly lingerMs = EVENT_LOADERS_LINGER_MS) {}

  /** Event loader sets held now (tests). */
  get size(): number {
    return this.sets.size;
  }

  /** The loaders `rc`'s subscribers run event `eventId` with; `release` once its result is made. */
  acquire(rc: RequestContext, eventId: string): { loaders: Loaders; release(): void } {
    const permissions = [...rc.permissions].sort();
    const key = JSON.stringify([rc.accountId, rc.mode, permissions, eventId]);
    let set = this.sets.get(key);
    if (!set) {
      const scope: RequestContext = { accountId: rc.accountId, mode: rc.mode, permissions, requestId: rc.requestId, clock: rc.clock };
      set = { loaders: createLoaders(this.services, scope), running: 0 };
      this.sets.set(key, set);
    }
    const held = set;
    clearTimeout(held.linger);
    held.running += 1;
    let released = false;
    return {
      loaders: held.loaders,
      release: () => {
        if (released) return;
        released = true;
        held.running -= 1;
        if (held.running > 0) return;
        held.linger = setTimeout(() => {
          if (held.running === 0 && this.sets.get(key) === held) this.sets.delete(key);
        }, this.lingerMs);
        held.linger.unref();
      },
    };
  }
}

/**
 * One event of a subscription executed with the loaders EventLoaders shares for it rather than the
 * subscription's own (an event that is not one of ours, without an id, keeps those).
 */
export async function executeSharingLoaders(args: ExecutionArgs, event: unknown, eventLoaders: EventLoaders): Promise<ExecutionResult> {
  const context = args.contextValue as { rc: RequestContext; loaders: Loaders };
  const id = typeof (event as { id?: unknown })?.id === 'string' ? (event as { id: string }).id : null;
  const shared = id === null ? null : eventLoaders.acquire(context.rc, id);
  try {
    return await execute({ ...args, rootValue: event, contextValue: shared ? { ...context, loaders: shared.loaders } : context });
  } finally {
    shared?.release();
  }
}
