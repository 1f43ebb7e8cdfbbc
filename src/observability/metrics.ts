import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PublishedEvent } from '../core/event-bus';
import { errorForLog, type Logger } from '../logger';

/** Every series name starts with this (the Node.js process metrics too: `payorch_nodejs_eventloop_lag_seconds`). */
export const METRIC_PREFIX = 'payorch_';

/** An outbox's owed rows: due now (in flight included) and waiting for a later retry, and since when the oldest due one is. */
export interface OutboxDepth {
  due: number;
  scheduled: number;
  oldestDueAt: Date | null;
}

/** A database connection pool (or SQLite's single writer, a pool of one) as it stands. */
export interface PoolUsage {
  pool: string;
  max: number;
  used: number;
  idle: number;
  /** Requests (transactions) waiting for a connection. */
  waiting: number;
}

export type CircuitStateName = 'closed' | 'open' | 'half_open';
const CIRCUIT_STATES: readonly CircuitStateName[] = ['closed', 'open', 'half_open'];

/**
 * What is read when Prometheus scrapes, never on a request's path: the circuits, the outboxes'
 * depths (one grouped statement each), the pools. Each may be absent.
 */
export interface ScrapeSources {
  /** The circuit of every gateway the breaker knows and of `also` (the gateways called here). */
  circuits?: (also: Iterable<string>) => Iterable<[string, CircuitStateName]>;
  webhookQueue?: (now: Date) => Promise<OutboxDepth>;
  mailOutbox?: (now: Date) => Promise<OutboxDepth>;
  dbPools?: () => PoolUsage[];
  /** The read replicas as their last check found them (lag in ms, null when not known). */
  replicas?: () => Array<{ name: string; lagMs: number | null }>;
  /** Business time, for how long due rows have waited. */
  now?: () => Date;
}

/** Where an instance's committed events are told (EventBus.onCommitted). */
export interface CommittedEvents {
  onCommitted(listener: (event: PublishedEvent) => void): () => void;
}

/** Which rate budget refused a request: a key's account and mode, a client address, a GraphQL document's cost, failed WebSocket connects. */
export type RateBudgetName = 'account' | 'ip' | 'graphql_cost' | 'ws_failed_connects';

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const CALL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const JOB_BUCKETS = [0.005, 0.025, 0.1, 0.5, 1, 5, 15, 60, 300, 900];

/** A child series per label tuple, looked up by a joined key: prom-client hashes the labels on every call otherwise. */
function children<T>(make: (...values: string[]) => T): (...values: string[]) => T {
  const made = new Map<string, T>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = made.get(key);
    if (child === undefined) made.set(key, (child = make(...values)));
    return child;
  };
}

/**
 * The Prometheus metrics of one service instance, in a registry of its own (several instances in
 * one process, as in tests, never share series). Disabled (neither METRICS_PORT nor
 * METRICS_TOKEN), every recording call returns at once and nothing is collected.
 *
 * Label values are bounded by construction: route templates, status codes, gateway ids and types,
 * statuses and outcomes from closed sets. Never an account, customer or object id, never card data.
 */
export class Metrics {
  readonly registry = new Registry();
  /** Disabled, the metrics are made but registered nowhere: the exposition stays empty. */
  private readonly registers = this.enabled ? [this.registry] : [];
  private readonly gatewaysCalled = new Set<string>();
  private readonly unsubscribe: Array<() => void> = [];
  private readonly failedAt = new Map<string, number>();
  /** What the scrape-time gauges run when collected (set by `watch`). */
  private readonly scrape: { circuits?: () => void; webhookQueue?: () => Promise<void>; mailOutbox?: () => Promise<void>; pools?: () => void; replicas?: () => void } = {};

  private readonly httpDuration = new Histogram({
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    help: 'HTTP requests by method, route template and status code: how long each took to answer',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: this.registers,
  });
  private readonly httpChild = children((method, route, status) => this.httpDuration.labels(method, route, status));

  private readonly payments = new Counter({
    name: `${METRIC_PREFIX}payments_total`,
    help: 'Payments moved to a status (each committed move that writes an event, on the instance that made it), by status and gateway id',
    labelNames: ['status', 'gateway'] as const,
    registers: this.registers,
  });
  private readonly paymentChild = children((status, gateway) => this.payments.labels(status, gateway));

  private readonly refunds = new Counter({
    name: `${METRIC_PREFIX}refunds_total`,
    help: 'Refunds moved to a status (pending when created), by status and gateway id',
    labelNames: ['status', 'gateway'] as const,
    registers: this.registers,
  });
  private readonly refundChild = children((status, gateway) => this.refunds.labels(status, gateway));

  private readonly gatewayDuration = new Histogram({
    name: `${METRIC_PREFIX}gateway_call_duration_seconds`,
    help: 'Calls to payment gateways (charge, capture, cancel, refund, status, save_card): how long each took, by gateway id and operation',
    labelNames: ['gateway', 'operation'] as const,
    buckets: CALL_BUCKETS,
    registers: this.registers,
  });
  private readonly gatewayCalls = new Counter({
    name: `${METRIC_PREFIX}gateway_calls_total`,
    help: 'Calls to payment gateways by gateway id and type, operation and outcome (succeeded, declined, retryable_error, timeout, requires_action, error)',
    labelNames: ['gateway', 'gateway_type', 'operation', 'outcome'] as const,
    registers: this.registers,
  });
  private readonly gatewayChild = children((gateway, type, operation, outcome) => ({
    duration: this.gatewayDuration.labels(gateway, operation),
    calls: this.gatewayCalls.labels(gateway, type, operation, outcome),
  }));

  private readonly circuitState = new Gauge({
    name: `${METRIC_PREFIX}gateway_circuit_state`,
    help: "Each gateway's circuit breaker on this instance: 1 for its current state (closed, open, half_open), 0 for the others",
    labelNames: ['gateway', 'state'] as const,
    registers: this.registers,
    collect: () => this.scrape.circuits?.(),
  });

  private readonly webhookDuration = new Histogram({
    name: `${METRIC_PREFIX}webhook_delivery_duration_seconds`,
    help: 'Webhook delivery attempts sent to receivers: how long each took, by outcome (delivered: a 2xx answer; failed: anything else)',
    labelNames: ['outcome'] as const,
    buckets: CALL_BUCKETS,
    registers: this.registers,
  });
  private readonly webhookDeliveries = new Counter({
    name: `${METRIC_PREFIX}webhook_deliveries_total`,
    help: 'Webhook delivery attempts by what they left the delivery as: delivered, retrying, failed (retries spent), held or abandoned (not sent)',
    labelNames: ['result'] as const,
    registers: this.registers,
  });
  private readonly webhookQueue = new Gauge({
    name: `${METRIC_PREFIX}webhook_queue_depth`,
    help: 'Webhook deliveries owed: due now (in flight included) or scheduled for a retry',
    labelNames: ['state'] as const,
    registers: this.registers,
    collect: () => this.scrape.webhookQueue?.(),
  });
  private readonly webhookOldest = new Gauge({
    name: `${METRIC_PREFIX}webhook_queue_oldest_due_seconds`,
    help: 'How long the oldest due webhook delivery has been due (0 when none is)',
    registers: this.registers,
    collect: () => this.scrape.webhookQueue?.(),
  });

  private readonly mailSends = new Counter({
    name: `${METRIC_PREFIX}mail_sends_total`,
    help: 'Mail send attempts by what they left the mail as: sent, retrying, failed',
    labelNames: ['result'] as const,
    registers: this.registers,
  });
  private readonly mailOutbox = new Gauge({
    name: `${METRIC_PREFIX}mail_outbox_depth`,
    help: 'Mails queued: due now (in flight included) or scheduled for a retry',
    labelNames: ['state'] as const,
    registers: this.registers,
    collect: () => this.scrape.mailOutbox?.(),
  });
  private readonly mailOldest = new Gauge({
    name: `${METRIC_PREFIX}mail_outbox_oldest_due_seconds`,
    help: 'How long the oldest due mail has been due (0 when none is)',
    registers: this.registers,
    collect: () => this.scrape.mailOutbox?.(),
  });

  private readonly jobDuration = new Histogram({
    name: `${METRIC_PREFIX}job_duration_seconds`,
    help: 'Background job runs (bill-subscriptions is the billing run): how long each took, by job_name and outcome (ok, error); _count is the number of runs',
    labelNames: ['job_name', 'outcome'] as const,
    buckets: JOB_BUCKETS,
    registers: this.registers,
  });
  private readonly jobItems = new Counter({
    name: `${METRIC_PREFIX}job_items_total`,
    help: 'What background job runs reported doing, by job_name and count name (bill-subscriptions: billed, failed)',
    labelNames: ['job_name', 'item'] as const,
    registers: this.registers,
  });

  private readonly poolConnections = new Gauge({
    name: `${METRIC_PREFIX}db_pool_connections`,
    help: 'Database connections by pool and state (used, idle); on SQLite the pool is its single writer',
    labelNames: ['pool', 'state'] as const,
    registers: this.registers,
    collect: () => this.scrape.pools?.(),
  });
  private readonly poolMax = new Gauge({
    name: `${METRIC_PREFIX}db_pool_max_connections`,
    help: 'The most connections each pool opens',
    labelNames: ['pool'] as const,
    registers: this.registers,
    collect: () => this.scrape.pools?.(),
  });
  private readonly poolWaiting = new Gauge({
    name: `${METRIC_PREFIX}db_pool_waiting`,
    help: 'Requests waiting for a connection of the pool (SQLite: write transactions waiting for the writer)',
    labelNames: ['pool'] as const,
    registers: this.registers,
    collect: () => this.scrape.pools?.(),
  });
  private readonly replicaLag = new Gauge({
    name: `${METRIC_PREFIX}db_replica_lag_seconds`,
    help: 'How far each read replica is behind the primary; present only when replicas are configured',
    labelNames: ['replica'] as const,
    registers: this.registers,
    collect: () => this.scrape.replicas?.(),
  });

  private readonly rateRefusals = new Counter({
    name: `${METRIC_PREFIX}rate_limit_refusals_total`,
    help: 'Requests refused by a rate budget: account (a key\'s account and mode), ip (no key), graphql_cost (a GraphQL document\'s cost), ws_failed_connects',
    labelNames: ['budget'] as const,
    registers: this.registers,
  });
  private readonly publicPayRefusals = new Counter({
    name: `${METRIC_PREFIX}public_pay_refusals_total`,
    help: 'Public pays (hosted pages) refused by the caps on failed attempts, by cap (session, address, account) and page (checkout_session, payment_link, invoice)',
    labelNames: ['cap', 'page'] as const,
    registers: this.registers,
  });

  constructor(readonly enabled: boolean, private readonly logger?: Logger) {
    if (!enabled) return;
    // Event-loop lag (payorch_nodejs_eventloop_lag_*), heap, GC, CPU, file descriptors.
    collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
  }

  /** The exposition's Content-Type. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition, with the scrape-time gauges read now. */
  exposition(): Promise<string> {
    return this.registry.metrics();
  }

  /** Reads `sources` at every scrape, and counts the payments' and refunds' moves committed here. */
  watch(sources: ScrapeSources, committed?: CommittedEvents): void {
    if (!this.enabled) return;
    if (committed) this.unsubscribe.push(committed.onCommitted((event) => this.countCommitted(event)));
    const now = sources.now ?? (() => new Date());
    const { circuits, dbPools } = sources;
    if (circuits) {
      this.scrape.circuits = () => {
        this.circuitState.reset();
        for (const [gateway, state] of circuits(this.gatewaysCalled)) {
          for (const s of CIRCUIT_STATES) this.circuitState.labels(gateway, s).set(s === state ? 1 : 0);
        }
      };
    }
    /** Both gauges of an outbox are collected in the same scrape: one statement answers both. */
    const outbox = (name: string, read: ((now: Date) => Promise<OutboxDepth>) | undefined, depth: Gauge<'state'>, oldest: Gauge) => {
      if (!read) return undefined;
      const collect = async () => {
        try {
          const at = now();
          const d = await read(at);
          depth.labels('due').set(d.due);
          depth.labels('scheduled').set(d.scheduled);
          oldest.set(d.oldestDueAt ? Math.max(0, (at.getTime() - d.oldestDueAt.getTime()) / 1000) : 0);
        } catch (err) {
          // Unknown this scrape: no depth series, and NaN for the age (a gauge without labels always has its series).
          depth.reset();
          oldest.set(NaN);
          this.collectFailed(name, err);
        }
      };
      let reading: Promise<void> | null = null;
      return () => (reading ??= collect().finally(() => {
        reading = null;
      }));
    };
    this.scrape.webhookQueue = outbox('webhook queue', sources.webhookQueue, this.webhookQueue, this.webhookOldest);
    this.scrape.mailOutbox = outbox('mail outbox', sources.mailOutbox, this.mailOutbox, this.mailOldest);
    const { replicas } = sources;
    if (replicas) {
      this.scrape.replicas = () => {
        // A lag not known (the replica unreachable) has no series this scrape.
        this.replicaLag.reset();
        for (const r of replicas()) if (r.lagMs !== null) this.replicaLag.labels(r.name).set(r.lagMs / 1000);
      };
    }
    if (dbPools) {
      this.scrape.pools = () => {
        for (const p of dbPools()) {
          this.poolConnections.labels(p.pool, 'used').set(p.used);
          this.poolConnections.labels(p.pool, 'idle').set(p.idle);
          this.poolMax.labels(p.pool).set(p.max);
          this.poolWaiting.labels(p.pool).set(p.waiting);
        }
      };
    }
  }

  observeHttp(method: string, route: string, status: number, seconds: number): void {
    if (!this.enabled) return;
    this.httpChild(method, route, String(status)).observe(seconds);
  }

  observeGatewayCall(gatewayId: string, gatewayType: string, operation: string, outcome: string, seconds: number): void {
    if (!this.enabled) return;
    this.gatewaysCalled.add(gatewayId);
    const child = this.gatewayChild(gatewayId, gatewayType, operation, outcome);
    child.duration.observe(seconds);
    child.calls.inc();
  }

  /** One webhook attempt: `seconds` is null when nothing was sent (held, abandoned). */
  observeWebhookDelivery(result: 'delivered' | 'retrying' | 'failed' | 'held' | 'abandoned', delivered: boolean, seconds: number | null): void {
    if (!this.enabled) return;
    this.webhookDeliveries.labels(result).inc();
    if (seconds !== null) this.webhookDuration.labels(delivered ? 'delivered' : 'failed').observe(seconds);
  }

  countMailSend(result: 'sent' | 'retrying' | 'failed'): void {
    if (!this.enabled) return;
    this.mailSends.labels(result).inc();
  }

  observeJob(job: string, ok: boolean, seconds: number, counts: Record<string, number> = {}): void {
    if (!this.enabled) return;
    this.jobDuration.labels(job, ok ? 'ok' : 'error').observe(seconds);
    for (const [item, n] of Object.entries(counts)) if (n > 0) this.jobItems.labels(job, item).inc(n);
  }

  countRateLimitRefusal(budget: RateBudgetName): void {
    if (!this.enabled) return;
    this.rateRefusals.labels(budget).inc();
  }

  countPublicPayRefusal(cap: 'session' | 'address' | 'account', page: 'checkout_session' | 'payment_link' | 'invoice'): void {
    if (!this.enabled) return;
    this.publicPayRefusals.labels(cap, page).inc();
  }

  /**
   * For the read replicas' monitor: how far `replica` (a name of the operator's configuration,
   * never a URL) is behind. The gauge has series only once this is called.
   */
  setReplicaLag(replica: string, seconds: number): void {
    if (!this.enabled) return;
    this.replicaLag.labels(replica).set(seconds);
  }

  /** A replica taken out of the configuration: its series goes. */
  forgetReplica(replica: string): void {
    if (!this.enabled) return;
    this.replicaLag.remove(replica);
  }

  close(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  private countCommitted(event: PublishedEvent): void {
    const kind = event.type.startsWith('payment.') ? this.paymentChild : event.type.startsWith('refund.') ? this.refundChild : null;
    // payment.updated changes no status (metadata, amounts refunded).
    if (!kind || event.type === 'payment.updated') return;
    const object = event.data.object;
    const status = typeof object.status === 'string' ? object.status : 'unknown';
    const gateway = typeof object.gatewayId === 'string' ? object.gatewayId : 'none';
    kind(status, gateway).inc();
  }

  /** A scrape-time read failed (the database is down): logged at most once a minute per source. */
  private collectFailed(name: string, err: unknown): void {
    const at = performance.now();
    if (at - (this.failedAt.get(name) ?? -Infinity) < 60_000) return;
    this.failedAt.set(name, at);
    this.logger?.warn({ err: errorForLog(err), source: name }, 'metrics: a scrape-time read failed; its series are left out of this scrape');
  }
}
