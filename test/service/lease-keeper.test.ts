import { ManualStopwatch } from '../../src/core/clock';
import { readTime } from '../../src/db/database';
import { LeaseKeeper } from '../../src/modules/payments/lease-keeper';
import { startServices, type ServiceHarness } from '../helpers/services';

/**
 * LeaseKeeper: a request starts a gateway call only while its row's lease is its own. A
 * heartbeat that finds the lease run out, or taken by recovery, ends that. Leases are on the
 * database's clock; what the process knows of its own is timed on its stopwatch.
 */
let h: ServiceHarness;
beforeAll(async () => {
  h = await startServices();
});
afterAll(() => h?.stop());

async function pendingPayment(): Promise<string> {
  const ctx = (await h.account()).test;
  await h.services.gateways.create(ctx, { type: 'simulator', name: 'sim', settings: { latencyMs: 0 } });
  const pay = await h.services.payments.create(ctx, { amount: 500, currency: 'usd', paymentMethod: 'pm_card_visa' });
  await h.services.db.execute("UPDATE payments SET status = 'pending' WHERE id = $1", [pay.id]);
  return pay.id;
}
/** The row's lease, `ms` from the database's now (negative: ran out that long ago). */
const setLease = (id: string, ms: number) => h.services.db.execute(`UPDATE payments SET lease_until = ${h.services.db.nowPlusSql('$1')} WHERE id = $2`, [ms, id]);

describe('LeaseKeeper', () => {
  it('should keep a lease it renews, and give up one that recovery took or that ran out', async () => {
    const stopwatch = new ManualStopwatch();
    const keeper = new LeaseKeeper(h.services.db, stopwatch, h.services.logger, 10_000, 60_000);
    try {
      const [mine, taken, lapsed] = [await pendingPayment(), await pendingPayment(), await pendingPayment()];
      const start = keeper.leaseStart();
      for (const id of [mine, taken, lapsed]) {
        await setLease(id, 10_000);
        keeper.hold('payments', id, start);
      }
      // Business time does not age a lease.
      h.clock.advance(3_600_000);
      expect(keeper.holds('payments', mine)).toBe(true);
      stopwatch.advance(6_000); // less than half a lease left: only a heartbeat keeps the calls going
      expect(keeper.holds('payments', mine)).toBe(false);
      await setLease(taken, 120_000); // recovery's claim
      await setLease(lapsed, -1);
      await keeper.beat();
      expect([mine, taken, lapsed].map((id) => keeper.holds('payments', id))).toEqual([true, false, false]);
      // Renewed on the database's clock: a lease from its now.
      const [row] = await h.services.db.select<{ lease: unknown; now: unknown }>(`SELECT lease_until AS lease, ${h.services.db.nowSql} AS now FROM payments WHERE id = $1`, [mine]);
      const left = (readTime(row.lease) as Date).getTime() - (readTime(row.now) as Date).getTime();
      expect(left).toBeGreaterThan(5_000);
      expect(left).toBeLessThanOrEqual(10_000);
      stopwatch.advance(6_000);
      expect(keeper.holds('payments', mine)).toBe(false);
    } finally {
      keeper.stop();
    }
  });
});
