import type { LookupFunction } from 'node:net';
import type { Redis } from 'ioredis';
import type { ResolveHost } from './core/network/address-policy';
import type { Config } from './config';
import { Database } from './db/database';
import { MODELS } from './db/models';
import { migrateUp } from './db/migrator';
import { systemClock, systemStopwatch, type Clock, type Stopwatch } from './core/clock';
import { EventBus } from './core/event-bus';
import { DeliveredEvents, PostgresFanout, RedisFanout, type EventFanout, type LoadEventsSince, type WrittenReadBack } from './core/event-fanout';
import { WrittenMarks } from './core/written-marks';
import { onPrimary } from './db/read-routing';
import { RedisBreaker, connectRedis } from './core/redis-breaker';
import { RateLimiter } from './core/rate-limit';
import { createLogger, errorForLog, type Logger } from './logger';
import { AccountService } from './modules/accounts/account.service';
import { CustomerService } from './modules/customers/customer.service';
import { CustomerCredit } from './modules/customers/customer-credit';
import { CatalogService } from './modules/catalog/catalog.service';
import { TaxRateService } from './modules/tax-rates/tax-rate.service';
import { EventService } from './modules/events/event.service';
import { EventStore } from './modules/events/event.store';
import { EventTail, PostgresEventHorizon, SQLITE_HORIZON } from './modules/events/event-tail';
import { EVENT_STREAM_LIMITS } from './modules/events/event-stream';
import { IdempotencyService } from './modules/idempotency/idempotency.service';
import { IdempotencyStore } from './modules/idempotency/idempotency.store';
import { SecretBox, deriveKey, loadEncryptionKey } from './core/crypto';
import { FxService } from './modules/fx/fx.service';
import { GatewayConfigService } from './modules/gateways/gateway-config.service';
import { RoutingService } from './modules/routing/routing.service';
import { GatewayTransactionStore } from './modules/payments/gateway-transaction.store';
import { PaymentMethodService } from './modules/payments/payment-method.service';
import { PaymentService } from './modules/payments/payment.service';
import { RefundService } from './modules/payments/refund.service';
import { LeaseKeeper } from './modules/payments/lease-keeper';
import type { Rng } from './modules/routing/rng';
import { createWebhookServices, type WebhookOptions, type WebhookServices } from './modules/webhooks';
import { PublicUrls } from './modules/payments/public-urls';
import { PaymentActions } from './modules/payments/payment-actions';
import { PublicPayPath } from './modules/payments/public-pay';
import { PublicAttempts } from './modules/payments/public-attempts';
import { CheckoutStore } from './modules/checkout/checkout.store';
import { CheckoutSessionService } from './modules/checkout/checkout-session.service';
import { PaymentLinkService } from './modules/checkout/payment-link.service';
import { createMailService, type MailOptions, type MailService } from './modules/mail/mail.service';
import { InvoiceService } from './modules/invoices/invoice.service';
import { closeInvoicePdfRenderer, renderInvoicePdf } from './modules/invoices/invoice-pdf';
import { invoiceEmail } from './modules/invoices/invoice-email';
import { TestClockService } from './modules/subscriptions/test-clock.service';
import { BillingService } from './modules/subscriptions/billing.service';
import { SubscriptionService } from './modules/subscriptions/subscription.service';
import { DashboardService } from './modules/dashboard/dashboard.service';
import { PaymentSummaryService } from './modules/payments/payment-summary';
import { ExportService, type ExportOptions } from './modules/exports/export.service';
import { exportSources } from './modules/exports/export-sources';
import { Metrics } from './observability/metrics';

/** The composition root: every service built once, with its dependencies. */
export interface Services {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  bus: EventBus;
  redis?: Redis;
  /** Whether Redis is in use or bypassed while it does not answer (GET /ready says which). */
  redisBreaker?: RedisBreaker;
  limiter: RateLimiter;
  accounts: AccountService;
  customers: CustomerService;
  /** The customers' credit balances: adjustments, their list, and what invoices credit and take (API.md §7, §12). */
  customerCredit: CustomerCredit;
  catalog: CatalogService;
  /** Tax rates, and the check of those invoices and subscriptions are given (API.md §12). */
  taxRates: TaxRateService;
  events: EventService;
  idempotency: IdempotencyService;
  fx: FxService;
  gateways: GatewayConfigService;
  routing: RoutingService;
  paymentMethods: PaymentMethodService;
  payments: PaymentService;
  /** Capture and cancel of authorisations, 3-D Secure answers, and their expiry and recovery jobs. */
  paymentActions: PaymentActions;
  refunds: RefundService;
  webhooks: WebhookServices;
  /** Where the hosted pages are (PUBLIC_URL, or this instance's HTTPS address). */
  urls: PublicUrls;
  checkoutSessions: CheckoutSessionService;
  paymentLinks: PaymentLinkService;
  /** The mail outbox: queue mail in a transaction, register status listeners and attachment renderers, start the worker. */
  mail: MailService;
  invoices: InvoiceService;
  testClocks: TestClockService;
  /** The billing run and its steps (the job, test clocks' advances, subscription requests). */
  billing: BillingService;
  subscriptions: SubscriptionService;
  /** The live dashboard's aggregates. */
  dashboard: DashboardService;
  /** The caps on failed public pays (API.md §11); the job purges what is past every window. */
  publicAttempts: PublicAttempts;
  /** `GET /v1/payments/summary`: a window's payments and refunds, summed per group. */
  paymentSummary: PaymentSummaryService;
  /** Exports of lists to files (API.md §2): the requests, and the job that writes and expires the files. */
  exports: ExportService;
  /** Prometheus metrics (METRICS_PORT / METRICS_TOKEN); disabled, every recording call is a no-op. */
  metrics: Metrics;
  close(): Promise<void>;
}

export interface ServiceOptions {
  clock?: Clock;
  logger?: Logger;
  /** Called with every SQL statement (tests count queries with it). */
  onSql?: (sql: string) => void;
  migrate?: boolean;
  /** Random source for routing (tests fix a seed). */
  routingRng?: Rng;
  /** Timeout for gateway calls and an extra CA for connectors (tests' local fakes). */
  gatewayTimeoutMs?: number;
  gatewayCa?: string;
  /** Replace DNS for gateway base URLs, at registration and at connect time (tests); the address policy still applies. */
  gatewayDns?: { resolveHost?: ResolveHost; lookup?: LookupFunction };
  webhooks?: WebhookOptions;
  mail?: MailOptions;
  /** How long a SQLite statement waits for another writer's lock (default 15 s). */
  sqliteBusyTimeoutMs?: number;
  /** How long a pending payment or refund stays its process's after a heartbeat (LeaseKeeper); heartbeats come four times a lease. PAYMENT_LEASE_MS unless given. */
  leaseMs?: number;
  /** What this process times the leases it holds on (tests move it by hand). */
  stopwatch?: Stopwatch;
  /** How long the billing run's claim holds a subscription (tests shorten it to see a crashed run's claims freed). */
  billingLeaseMs?: number;
  /** The export job's page size, lease and attempts (tests make pages small). */
  exports?: ExportOptions;
}

export async function createServices(config: Config, options: ServiceOptions = {}): Promise<Services> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const metrics = new Metrics(config.metricsPort !== undefined || config.metricsToken !== undefined, logger);
  const db = new Database({
    url: config.databaseUrl, models: MODELS, logging: options.onSql, sqliteBusyTimeoutMs: options.sqliteBusyTimeoutMs,
    replicas: config.databaseReplicaUrls.length > 0
      ? { urls: config.databaseReplicaUrls, maxLagMs: config.replicaMaxLagMs, afterWriteMs: config.replicaReadAfterWriteMs, logger }
      : undefined,
  });
  await db.init();
  if (db.tightenedFiles.length) logger.warn({ files: db.tightenedFiles }, 'database files were open to other users: made them owner-only (0600)');
  if (options.migrate !== false) {
    const applied = await migrateUp(db);
    if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
  }
  // A diagnostic: another instance holding the write lock past the busy timeout must not stop this one starting.
  const durability = await db.sqliteDurability().catch((err: unknown) => {
    logger.warn({ err: errorForLog(err) }, 'sqlite durability settings could not be read');
    return null;
  });
  if (durability) logger.info(durability, 'sqlite durability');
  const redis = config.redisUrl ? connectRedis(config.redisUrl, config.redisTimeoutMs) : undefined;
  const redisBreaker = redis
    ? new RedisBreaker(redis, logger, {
      fallback: `rate limits counted per instance; live events ${db.dialect === 'postgres' ? 'through PostgreSQL NOTIFY' : 'to other instances once Redis is back'}`,
    })
    : undefined;
  await redisBreaker?.start();
  const bus = new EventBus();
  const eventStore = new EventStore(db);
  const eventTail = new EventTail(eventStore, db.dialect === 'postgres' ? new PostgresEventHorizon(db, logger) : SQLITE_HORIZON, bus, logger);
  const events = new EventService(eventStore, bus, EVENT_STREAM_LIMITS, eventTail);
  // Committed events reach subscribers on every instance: Redis when configured (with NOTIFY
  // beside it on PostgreSQL, for when Redis is unavailable), else NOTIFY.
  const loadEvent = (ids: string[]) => events.loadPublished(ids);
  const delivered = new DeliveredEvents(clock);
  const loadSince: LoadEventsSince = (...args) => events.loadPublishedSince(...args);
  // Marks of how far events had been written: a fan-out's read-back after a gap finds by them
  // the events stamped in the past (a test clock's time) that were written during the gap.
  const writtenMarks = new WrittenMarks((scopes) => onPrimary(() => eventStore.writtenMark(scopes)), () => bus.streamScopes(), clock, logger);
  const written: WrittenReadBack = { marks: writtenMarks, load: (...args) => onPrimary(() => eventStore.loadWrittenAfter(...args)) };
  const notify = db.dialect === 'postgres' ? new PostgresFanout(config.databaseUrl, bus, loadEvent, loadSince, logger, clock, delivered, written) : undefined;
  const fanout: EventFanout | undefined = redis
    ? new RedisFanout(redis, bus, loadEvent, logger, clock, { breaker: redisBreaker!, notify, delivered, loadSince, written })
    : notify;
  if (fanout) {
    await writtenMarks.start();
    bus.onScopeOpened((scope) => writtenMarks.noteScope(scope));
  }
  await fanout?.start();
  bus.connectRemote(fanout);
  const encryptionKey = loadEncryptionKey({ encryptionKey: config.encryptionKey, dataDir: config.dataDir });
  const keys = new IdempotencyStore(db, clock, config.idempotencyTtlHours);
  const idempotency = new IdempotencyService(
    keys, clock, new SecretBox(deriveKey(encryptionKey, 'idempotency-responses')), deriveKey(encryptionKey, 'idempotency-fingerprint'),
  );
  const customerCredit = new CustomerCredit(db, events, idempotency);
  const customers = new CustomerService(db, events, idempotency, customerCredit);
  const fingerprintKey = deriveKey(encryptionKey, 'card-fingerprint');
  const urls = new PublicUrls(config.publicUrl, config.port);
  const gateways = new GatewayConfigService(db, new SecretBox(deriveKey(encryptionKey, 'gateway-credentials')), {
    publicBaseUrl: () => urls.base(),
    timeoutMs: options.gatewayTimeoutMs,
    ca: options.gatewayCa,
    clock,
    allowPrivateBaseUrl: config.gatewayAllowPrivateBaseUrl,
    resolveHost: options.gatewayDns?.resolveHost,
    lookup: options.gatewayDns?.lookup,
    metrics,
  }, idempotency);
  const fx = new FxService(db);
  const routing = new RoutingService(db, gateways, clock, options.routingRng);
  const gtx = new GatewayTransactionStore(db);
  const leaseMs = options.leaseMs ?? config.paymentLeaseMs;
  const leases = new LeaseKeeper(db, options.stopwatch ?? systemStopwatch, logger, leaseMs, leaseMs === undefined ? undefined : leaseMs / 4);
  const paymentMethods = new PaymentMethodService(db, customers, gateways, routing, events, gtx, idempotency, fingerprintKey);
  const accounts = new AccountService(db, clock, idempotency, config.apiKeyCacheMs);
  const catalog = new CatalogService(db, events, idempotency);
  const taxRates = new TaxRateService(db, events, idempotency);
  const payments = new PaymentService(db, events, customers, fx, routing, gateways, paymentMethods, gtx, idempotency, keys, fingerprintKey, logger, leases);
  // The caps on failed pays of the hosted pages, shared by every instance through the database.
  const publicAttempts = new PublicAttempts(db, events, accounts, clock, logger, metrics);
  const publicPay = new PublicPayPath(payments, paymentMethods, idempotency, clock, publicAttempts);
  // A checkout session's pay claims and completes it with its payment's writes (PaymentHold).
  payments.useHolds(new CheckoutStore(db));
  payments.usePublicBase(() => urls.base());
  const paymentActions = new PaymentActions(db, events, gateways, gtx, idempotency, clock, logger);
  const mail = createMailService({ db, clock, logger, config, options: options.mail, metrics });
  const invoices = new InvoiceService(
    db, events, idempotency, customers, accounts, payments, publicPay, urls, mail,
    { pdf: renderInvoicePdf, email: invoiceEmail }, clock, logger, customerCredit, taxRates,
  );
  // An invoice's e-mail carries its PDF, rendered when the mail is sent; its emailStatus follows the mail's.
  mail.registerAttachmentRenderer('invoice_pdf', (source) => renderInvoicePdf(source.document));
  mail.onStatusChange('invoice', (t, about, status) => invoices.setEmailStatus(t, about.id, status));
  const billingLeaseMs = options.billingLeaseMs ?? config.billingLeaseMs;
  const testClocks = new TestClockService(db, idempotency, { leaseMs: billingLeaseMs });
  const billing = new BillingService(db, events, invoices, customers, accounts, logger, { leaseMs: billingLeaseMs, clock });
  testClocks.useBilling(billing);
  customers.useTestClocks(testClocks);
  const subscriptions = new SubscriptionService(db, idempotency, customers, catalog, paymentMethods, payments, invoices, billing, testClocks, logger);
  const checkoutSessions = new CheckoutSessionService(db, events, idempotency, customers, catalog, accounts, publicPay, urls, clock, logger);
  // A retry answers with a checkout session; a session tied to a subscription pays through it.
  subscriptions.useCheckoutSessions(checkoutSessions);
  checkoutSessions.useSubscriptions(subscriptions);
  const refunds = new RefundService(db, events, gateways, gtx, idempotency, logger, leases);
  const exports = new ExportService(
    db, config.dataDir, exportSources({ payments, refunds, customers, invoices, subscriptions, events }), idempotency, clock, logger,
    () => urls.base(), options.exports,
  );
  const services: Services = {
    config,
    db,
    clock,
    logger,
    bus,
    redis,
    redisBreaker,
    limiter: new RateLimiter(redis && { client: redis, breaker: redisBreaker! }, metrics),
    accounts,
    customers,
    customerCredit,
    catalog,
    taxRates,
    events,
    idempotency,
    fx,
    gateways,
    routing,
    paymentMethods,
    payments,
    paymentActions,
    refunds,
    webhooks: createWebhookServices({ db, events, bus, clock, logger, config, encryptionKey, options: options.webhooks, idempotency, metrics }),
    urls,
    checkoutSessions,
    paymentLinks: new PaymentLinkService(db, events, idempotency, catalog, accounts, publicPay, urls),
    mail,
    invoices,
    testClocks,
    billing,
    subscriptions,
    dashboard: new DashboardService(db),
    publicAttempts,
    paymentSummary: new PaymentSummaryService(db),
    exports,
    metrics,
    async close() {
      metrics.close();
      leases.stop();
      mail.close();
      await closeInvoicePdfRenderer();
      redisBreaker?.stop();
      eventTail.stop();
      writtenMarks.stop();
      await fanout?.stop();
      if (redis) redis.disconnect();
      await db.close();
    },
  };
  // Read at scrape time only; payments and refunds counted from the events committed here.
  metrics.watch({
    circuits: (also) => routing.circuitStates(also),
    webhookQueue: (now) => services.webhooks.deliveries.queueDepth(now),
    mailOutbox: (now) => mail.outboxDepth(now),
    dbPools: () => db.poolUsage(),
    replicas: db.replicas ? () => db.replicas?.status() ?? [] : undefined,
    now: () => clock.now(),
  }, bus);
  return services;
}
