import { Umzug, SequelizeStorage } from 'umzug';
import type { QueryInterface } from 'sequelize';
import type { Database } from './database';
import * as m0001 from './migrations/0001-foundation';
import * as m0002 from './migrations/0002-payments';
import * as m0003 from './migrations/0003-webhooks';
import * as m0004 from './migrations/0004-partial-indexes';
import * as m0005 from './migrations/0005-keyed-idempotency-fingerprints';
import * as m0006 from './migrations/0006-idempotency-key-owner';
import * as m0007 from './migrations/0007-refund-idempotency-key';
import * as m0008 from './migrations/0008-webhook-fair-claims';
import * as m0009 from './migrations/0009-webhook-secret-overlap';
import * as m0010 from './migrations/0010-payment-requires-review';
import * as m0011 from './migrations/0011-pending-since-refund-review';
import * as m0012 from './migrations/0012-checkout';
import * as m0013 from './migrations/0013-invoices';
import * as m0014 from './migrations/0014-mail-outbox';
import * as m0015 from './migrations/0015-subscriptions';
import * as m0016 from './migrations/0016-dashboard-indexes';
import * as m0017 from './migrations/0017-event-object-id';
import * as m0018 from './migrations/0018-billing-claim-index';
import * as m0019 from './migrations/0019-payment-counts';
import * as m0020 from './migrations/0020-public-pay-guards';
import * as m0021 from './migrations/0021-customer-credit';
import * as m0022 from './migrations/0022-subscription-last-change';
import * as m0023 from './migrations/0023-parties';
import * as m0024 from './migrations/0024-tax-rates';
import * as m0025 from './migrations/0025-invoice-parties-snapshot';
import * as m0026 from './migrations/0026-payment-capture';
import * as m0027 from './migrations/0027-list-filter-indexes';
import * as m0028 from './migrations/0028-exports';
import * as m0029 from './migrations/0029-event-stream-order';
import * as m0030 from './migrations/0030-webhook-endpoint-order';
import * as m0031 from './migrations/0031-event-seq-after-xid';

type Migration = { up(p: { context: QueryInterface }): Promise<void>; down(p: { context: QueryInterface }): Promise<void> };

// Listed explicitly so the same list runs from ts-node, jest and compiled output.
const MIGRATIONS: Array<[string, Migration]> = [
  ['0001-foundation', m0001],
  ['0002-payments', m0002],
  ['0003-webhooks', m0003],
  ['0004-partial-indexes', m0004],
  ['0005-keyed-idempotency-fingerprints', m0005],
  ['0006-idempotency-key-owner', m0006],
  ['0007-refund-idempotency-key', m0007],
  ['0008-webhook-fair-claims', m0008],
  ['0009-webhook-secret-overlap', m0009],
  ['0010-payment-requires-review', m0010],
  ['0011-pending-since-refund-review', m0011],
  ['0012-checkout', m0012],
  ['0013-invoices', m0013],
  ['0014-mail-outbox', m0014],
  ['0015-subscriptions', m0015],
  ['0016-dashboard-indexes', m0016],
  ['0017-event-object-id', m0017],
  ['0018-billing-claim-index', m0018],
  ['0019-payment-counts', m0019],
  ['0020-public-pay-guards', m0020],
  ['0021-customer-credit', m0021],
  ['0022-subscription-last-change', m0022],
  ['0023-parties', m0023],
  ['0024-tax-rates', m0024],
  ['0025-invoice-parties-snapshot', m0025],
  ['0026-payment-capture', m0026],
  ['0027-list-filter-indexes', m0027],
  ['0028-exports', m0028],
  ['0029-event-stream-order', m0029],
  ['0030-webhook-endpoint-order', m0030],
  ['0031-event-seq-after-xid', m0031],
];

export function createMigrator(db: Database, log: (msg: string) => void = () => undefined) {
  return new Umzug<QueryInterface>({
    migrations: MIGRATIONS.map(([name, m]) => ({ name, up: m.up, down: m.down })),
    context: db.sequelize.getQueryInterface(),
    storage: new SequelizeStorage({ sequelize: db.sequelize, tableName: 'schema_migrations' }),
    logger: { info: (e) => log(`migration ${JSON.stringify(e)}`), warn: () => undefined, error: () => undefined, debug: () => undefined },
  });
}

export async function migrateUp(db: Database, log?: (msg: string) => void): Promise<string[]> {
  const done = await createMigrator(db, log).up();
  return done.map((m) => m.name);
}
