import { Redis } from 'ioredis';
import type { Config } from './config';
import { Database } from './db/database';
import { MODELS } from './db/models';
import { migrateUp } from './db/migrator';
import { systemClock, type Clock } from './core/clock';
import { EventBus } from './core/event-bus';
import { RateLimiter } from './core/rate-limit';
import { createLogger, type Logger } from './logger';
import { AccountService } from './modules/accounts/account.service';
import { CustomerService } from './modules/customers/customer.service';
import { CatalogService } from './modules/catalog/catalog.service';
import { EventService } from './modules/events/event.service';
import { IdempotencyService } from './modules/idempotency/idempotency.service';

/** The composition root: every service built once, with its dependencies. */
export interface Services {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  bus: EventBus;
  redis?: Redis;
  limiter: RateLimiter;
  accounts: AccountService;
  customers: CustomerService;
  catalog: CatalogService;
  events: EventService;
  idempotency: IdempotencyService;
  close(): Promise<void>;
}

export interface ServiceOptions {
  clock?: Clock;
  logger?: Logger;
  /** Called with every SQL statement (tests count queries with it). */
  onSql?: (sql: string) => void;
  migrate?: boolean;
}

export async function createServices(config: Config, options: ServiceOptions = {}): Promise<Services> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const db = new Database({ url: config.databaseUrl, models: MODELS, logging: options.onSql });
  await db.init();
  if (options.migrate !== false) {
    const applied = await migrateUp(db);
    if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
  }
  const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: true }) : undefined;
  const bus = new EventBus();
  const events = new EventService(db, bus);
  const services: Services = {
    config,
    db,
    clock,
    logger,
    bus,
    redis,
    limiter: new RateLimiter(redis),
    accounts: new AccountService(db, clock),
    customers: new CustomerService(db, events),
    catalog: new CatalogService(db, events),
    events,
    idempotency: new IdempotencyService(db, clock, config.idempotencyTtlHours),
    async close() {
      if (redis) redis.disconnect();
      await db.close();
    },
  };
  return services;
}
