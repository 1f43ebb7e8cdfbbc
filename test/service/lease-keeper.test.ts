import { LeaseKeeper } from '../../src/modules/payments/lease-keeper';
import { startServices, type ServiceHarness } from '../helpers/services';

/**
 * LeaseKeeper: a request starts a gateway call only while its row's lease is its own. A
 * heartbeat that finds the lease run out, or taken by recovery, ends that.
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
const setLease = (id: string, until: Date) => h.services.db.execute('UPDATE payments SET lease_until = $1 WHERE id = $2', [until, id]);

describe('LeaseKeeper', () => {
  it('should keep a lease it renews, and give up one that recovery took or that ran out', async () => {
    const keeper = new LeaseKeeper(h.services.db, h.clock, h.services.logger, 10_000, 60_000);
    try {
      const [mine, taken, lapsed] = [await pendingPayment(), await pendingPayment(), await pendingPayment()];
      const first = keeper.firstLease(h.clock.now());
      for (const id of [mine, taken, lapsed]) {
        await setLease(id, first);
        keeper.hold('payments', id, first);
      }
      h.clock.advance(6_000); // less than half a lease left: only a heartbeat keeps the calls going
      expect(keeper.holds('payments', mine, h.clock.now())).toBe(false);
      await setLease(taken, new Date(h.clock.now().getTime() + 120_000)); // recovery's claim
      await setLease(lapsed, new Date(h.clock.now().getTime() - 1));
      await keeper.beat();
      expect([mine, taken, lapsed].map((id) => keeper.holds('payments', id, h.clock.now()))).toEqual([true, false, false]);
    } finally {
      keeper.stop();
    }
  });
});
