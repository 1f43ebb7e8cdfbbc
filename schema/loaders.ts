import DataLoader from 'dataloader';
import type { RequestContext } from '../src/core/context';
import type { Services } from '../src/services';
import type { Customer } from '../src/modules/customers/customer.service';
import type { Price, Product } from '../src/modules/catalog/catalog.service';
import type { Payment } from '../src/modules/payments/payment.service';
import type { Refund } from '../src/modules/payments/refund.service';
import type { SavedPaymentMethod } from '../src/modules/payments/payment-method.service';
import type { GatewayTransaction } from '../src/modules/payments/gateway-transaction.log';

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
  return {
    customer: byIds<Customer>((ids) => services.customers.findMany(rc, ids)),
    product: byIds<Product>((ids) => services.catalog.findProducts(rc, ids)),
    paymentsByCustomer: new DataLoader<string, Payment[]>(async (customerIds) => {
      const found = await services.payments.forCustomers(rc, customerIds);
      return customerIds.map((id) => found.get(id) ?? []);
    }, { cache }),
    refundsByPayment: new DataLoader<string, Refund[]>(async (paymentIds) => {
      const found = await services.refunds.forPayments(rc, paymentIds);
      return paymentIds.map((id) => found.get(id) ?? []);
    }, { cache }),
    paymentMethodsByCustomer: new DataLoader<string, SavedPaymentMethod[]>(async (customerIds) => {
      const found = await services.paymentMethods.forCustomers(rc, customerIds);
      return customerIds.map((id) => found.get(id) ?? []);
    }, { cache }),
    gatewayTransactionsByPayment: new DataLoader<string, GatewayTransaction[]>(async (paymentIds) => {
      const found = await services.payments.gatewayTransactionsFor(rc, paymentIds);
      return paymentIds.map((id) => found.get(id) ?? []);
    }, { cache }),
    pricesByProduct: new DataLoader<string, Price[]>(async (productIds) => {
      const found = await services.catalog.pricesForProducts(rc, productIds);
      return productIds.map((id) => found.get(id) ?? []);
    }, { cache }),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
