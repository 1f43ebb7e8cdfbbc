import { systemStopwatch } from '../../src/core/clock';
import { IdempotencyStore } from '../../src/modules/idempotency/idempotency.store';
import { GatewayTransactionStore } from '../../src/modules/payments/gateway-transaction.store';
import { LeaseKeeper } from '../../src/modules/payments/lease-keeper';
import { PaymentService } from '../../src/modules/payments/payment.service';
import { RefundService } from '../../src/modules/payments/refund.service';
import type { Services } from '../../src/services';

/**
 * The payments and refunds of another instance on the same database: the same services, but
 * their own LeaseKeeper, which holds none of this process's rows. Its recovery takes over a row
 * whose lease ran out on the database's clock though a request of this process still works on
 * it, as another instance's would (this process's own recovery never does: see
 * LeaseKeeper.heldIds). sequelize-typescript binds models to one connection per process, so it
 * shares this one's; that changes nothing for the statements recovery runs.
 */
export function otherInstance(services: Services): { payments: PaymentService; refunds: RefundService; stop(): void } {
  const s = services;
  const leases = new LeaseKeeper(s.db, systemStopwatch, s.logger);
  const gtx = new GatewayTransactionStore(s.db);
  const keys = new IdempotencyStore(s.db, s.clock, s.config.idempotencyTtlHours);
  // Card fingerprints are made when a payment is created, never by recovery.
  const fingerprintKey = Buffer.alloc(32);
  return {
    payments: new PaymentService(s.db, s.events, s.customers, s.fx, s.routing, s.gateways, s.paymentMethods, gtx, s.idempotency, keys, fingerprintKey, s.logger, leases),
    refunds: new RefundService(s.db, s.events, s.gateways, gtx, s.idempotency, s.logger, leases),
    stop: () => leases.stop(),
  };
}
