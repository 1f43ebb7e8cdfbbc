import { randomBytes } from 'node:crypto';
import type { RequestContext } from '../../src/core/context';
import { newId } from '../../src/core/ids';
import type { Services } from '../../src/services';

/**
 * Due subscriptions for the billing run's tests and its benchmark: a daily price, a few customers
 * with a saved card (through the services, as the API makes them), then `count` subscriptions
 * inserted directly (many rows per statement) whose current period ended an hour before `now`:
 * each has exactly one period to bill, and the period after it ends in the future.
 */
export interface SeededPlan {
  priceId: string;
  customers: Array<{ id: string; paymentMethodId: string }>;
}

export const DAY_MS = 86_400_000;

export async function seedPlan(services: Services, ctx: RequestContext, customers = 4, unitAmount = 1500): Promise<SeededPlan> {
  const product = await services.catalog.createProduct(ctx, { name: 'Daily plan' });
  const price = await services.catalog.createPrice(ctx, { productId: product.id, unitAmount, currency: 'usd', recurring: { interval: 'day' } });
  const made: SeededPlan['customers'] = [];
  for (let i = 0; i < customers; i++) {
    const c = await services.customers.create(ctx, { email: `billing-${randomBytes(4).toString('hex')}@example.com` });
    const pm = await services.paymentMethods.save(ctx, c.id, { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } });
    made.push({ id: c.id, paymentMethodId: pm.id });
  }
  return { priceId: price.id, customers: made };
}

/** Inserts `count` subscriptions on real time, due at `now` (period ended an hour before it). Returns their ids. */
export async function seedDueSubscriptions(services: Services, ctx: RequestContext, plan: SeededPlan, count: number, now: Date): Promise<string[]> {
  const db = services.db;
  const end = new Date(now.getTime() - 3_600_000);
  const start = new Date(end.getTime() - DAY_MS);
  const ids: string[] = [];
  // Shared values as parameters, each row's own as further ones (SQLite allows 32,766 in all).
  const shared = [ctx.accountId, ctx.mode, plan.priceId, start, end, now];
  const chunk = 2_000;
  for (let done = 0; done < count; done += chunk) {
    const n = Math.min(chunk, count - done);
    const values: string[] = [];
    const bind: unknown[] = [...shared];
    for (let i = 0; i < n; i++) {
      const id = newId('sub');
      ids.push(id);
      const customer = plan.customers[(done + i) % plan.customers.length];
      const p = bind.length;
      bind.push(id, customer.id, customer.paymentMethodId);
      values.push(`($${p + 1}, $1, $2, $${p + 2}, $3, 1, 'active', 'charge_automatically', $4, $5, $4, ${db.dialect === 'postgres' ? 'false' : '0'}, $${p + 3}, '{}', $5, 0, 0, $6, $6)`);
    }
    await db.execute(
      `INSERT INTO subscriptions (id, account_id, mode, customer_id, price_id, quantity, status, collection_method, current_period_start,
         current_period_end, billing_cycle_anchor, cancel_at_period_end, default_payment_method_id, metadata, next_billing_at,
         invoice_attempts_seen, dunning_failures, created_at, updated_at)
       VALUES ${values.join(', ')}`,
      bind,
    );
  }
  return ids;
}
