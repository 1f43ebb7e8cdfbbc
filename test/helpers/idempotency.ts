import { randomBytes } from 'node:crypto';
import type { Clock } from '../../src/core/clock';
import { SecretBox } from '../../src/core/crypto';
import type { Database } from '../../src/db/database';
import { IdempotencyService } from '../../src/modules/idempotency/idempotency.service';
import { IdempotencyStore } from '../../src/modules/idempotency/idempotency.store';

/** An IdempotencyService on `db` with throwaway keys, for tests that build services one by one. */
export function testIdempotency(db: Database, clock: Clock): IdempotencyService {
  return new IdempotencyService(new IdempotencyStore(db, clock, 24), clock, new SecretBox(randomBytes(32)), randomBytes(32));
}
