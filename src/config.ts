import path from 'node:path';
import { z } from 'zod';
import cron from 'node-cron';

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const bool = z
  .string()
  .transform((v) => v.trim().toLowerCase())
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false (or 1/0, yes/no)' }))
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const PORT_MESSAGE = 'must be a port number from 0 to 65535';
const port = z.coerce
  .number({ error: PORT_MESSAGE })
  .int({ error: PORT_MESSAGE })
  .min(0, { error: PORT_MESSAGE })
  .max(65535, { error: PORT_MESSAGE });
/** A whole number from `min` (to `max`), in the message's own words: no validator wording reaches the operator. */
const wholeNumber = (message: string, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number({ error: message }).int({ error: message }).min(min, { error: message }).max(max, { error: message });
/** A duration in milliseconds greater than 0 (fractions allowed: tests shorten schedules). */
const positiveMs = z.coerce.number({ error: 'must be a number of milliseconds greater than 0' }).positive({ error: 'must be a number of milliseconds greater than 0' });
/** A timeout in milliseconds, from 100 ms to one hour. */
const millis = wholeNumber('must be a whole number of milliseconds from 100 to 3600000 (one hour)', 100, 3_600_000);

/**
 * Sockets one client address may hold open on a listener unless MAX_CONNECTIONS_PER_IP says
 * otherwise: a tenth of the default MAX_CONNECTIONS, so one address can never take every slot.
 */
const DEFAULT_MAX_CONNECTIONS_PER_IP = 100;
/**
 * How long a connection has for its TLS handshake unless TLS_HANDSHAKE_TIMEOUT_MS says
 * otherwise. A handshake is one round trip (TLS 1.3) or two (TLS 1.2): about 1.5 s even over a
 * satellite link, so 5 s leaves room for a lost packet sent again. A socket that never starts
 * TLS holds a slot only this long, so a client that keeps renewing idle sockets must open
 * slots ÷ 5 new ones a second to keep them, twice as many as when this was HEADERS_TIMEOUT_MS
 * (10 s).
 */
const DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS = 5_000;

/** The OpenTelemetry instrumentations tracing loads, by their short names (src/observability/tracing-sdk.ts). */
export const INSTRUMENTATIONS = ['http', 'koa', 'pg', 'graphql'] as const;
export type Instrumentation = (typeof INSTRUMENTATIONS)[number];

/** An OTLP/HTTP collector's address. */
const otlpUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL of an OTLP/HTTP collector, such as http://localhost:4318' });

/** The sender of outgoing mail unless MAIL_FROM says otherwise. */
export const DEFAULT_MAIL_FROM = 'Payorch <no-reply@localhost>';
/** `local@domain` or `Display Name <local@domain>`, on one line (a header value). */
const MAIL_FROM_PATTERN = /^(?:[^<>@\r\n]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/;

/**
 * Every variable the service reads at start-up, with its rule worded for the operator. A refused
 * value is quoted back in the message unless the variable can hold a secret (a key, or a URL
 * with a password).
 */
const VARIABLES = {
  DATABASE_URL: {
    secret: true,
    schema: z
      .string()
      .regex(/^(postgres|postgresql|sqlite):/, { error: 'must start with postgres://, postgresql:// or sqlite:' })
      .optional(),
  },
  // PostgreSQL streaming standbys that read-only requests read from (README, "Read replicas").
  DATABASE_REPLICA_URLS: {
    secret: true,
    schema: z
      .string()
      .transform((v) => v.split(',').map((url) => url.trim()).filter(Boolean))
      .refine((urls) => urls.length > 0 && urls.every((url) => /^postgres(ql)?:\/\/[^\s,]+$/.test(url) && URL.canParse(url)), {
        error: 'must be one or more postgres:// URLs, separated by commas',
      })
      .optional(),
  },
  REPLICA_READ_AFTER_WRITE_MS: { schema: wholeNumber('must be a whole number of milliseconds from 0 to 3600000 (one hour)', 0, 3_600_000).default(2_000) },
  REPLICA_MAX_LAG_MS: { schema: millis.default(5_000) },
  DATA_DIR: { schema: z.string().default('./data') },
  HOST: { schema: z.string().default('0.0.0.0') },
  PORT: { schema: port.default(8443) },
  HTTP_PORT: { schema: port.default(8080) },
  PUBLIC_URL: {
    schema: z
      .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL such as https://pay.example.com' })
      .optional(),
  },
  TLS_CERT_FILE: { schema: z.string().optional() },
  TLS_KEY_FILE: { schema: z.string().optional() },
  REDIS_URL: {
    secret: true,
    schema: z.string().regex(/^rediss?:\/\//, { error: 'must start with redis:// or rediss://' }).optional(),
  },
  // How long a Redis call may take before the service goes on without Redis.
  REDIS_TIMEOUT_MS: { schema: wholeNumber('must be a whole number of milliseconds from 10 to 10000', 10, 10_000).default(50) },
  SMTP_URL: {
    secret: true,
    schema: z
      .string()
      .regex(/^smtps?:\/\/[^\s/]/i, { error: 'must be an smtp:// or smtps:// URL such as smtp://user:password@mail.example.com:587' })
      .optional(),
  },
  MAIL_FROM: {
    schema: z
      .string()
      .regex(MAIL_FROM_PATTERN, { error: 'must be an e-mail address, with a display name or without, such as Payorch <billing@example.com>' })
      .default(DEFAULT_MAIL_FROM),
  },
  SMTP_TIMEOUT_MS: { schema: millis.default(30_000) },
  // The name the default account made on an empty database takes (what invoices, mails and pages show).
  ACCOUNT_NAME: {
    schema: z
      .string()
      .trim()
      .min(1, { error: 'must be a name of 1 to 200 characters, such as Acme Ltd' })
      .max(200, { error: 'must be a name of 1 to 200 characters, such as Acme Ltd' })
      .regex(/^[^\u0000-\u001f\u007f]*$/, { error: 'must be a name on one line, without control characters' })
      .optional(),
  },
  // How often the billing run looks for due subscriptions (node-cron, seconds field allowed).
  // How long a billing run's claim holds a subscription; a crashed instance's claims are free after it.
  BILLING_LEASE_MS: { schema: wholeNumber('must be a whole number of milliseconds from 1000 to 3600000 (one hour)', 1000, 3_600_000).default(300_000) },
  // How long a pending payment or refund stays its instance's after a heartbeat; absent, LeaseKeeper's 10 s.
  PAYMENT_LEASE_MS: { schema: wholeNumber('must be a whole number of milliseconds from 1000 to 600000 (ten minutes)', 1000, 600_000).optional() },
  BILLING_CRON: {
    schema: z.string().trim().refine((v) => cron.validate(v), { error: 'must be a cron expression such as */30 * * * * * (every 30 seconds) or 0 * * * * (hourly)' }).default('*/30 * * * * *'),
  },
  ENCRYPTION_KEY: {
    secret: true,
    schema: z
      .string()
      .regex(/^(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$/, { error: 'must be 32 bytes as 64 hex characters or base64' })
      .optional(),
  },
  TRUST_PROXY: { schema: bool.default(false) },
  WEBHOOK_ALLOW_PRIVATE: { schema: bool.default(false) },
  WEBHOOK_CA_FILE: { schema: z.string().optional() },
  GATEWAY_ALLOW_PRIVATE_BASE_URL: { schema: bool.default(false) },
  IDEMPOTENCY_TTL_HOURS: {
    schema: z.coerce
      .number({ error: 'must be a number of hours greater than 0' })
      .positive({ error: 'must be a number of hours greater than 0' })
      .default(24),
  },
  LOG_LEVEL: { schema: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }).default('info') },
  RUN_WORKERS: { schema: bool.default(true) },
  RATE_LIMIT_PER_MINUTE: { schema: wholeNumber('must be a whole number of requests per minute, 1 or more', 1).default(100) },
  GRAPHQL_WS_KEY_RECHECK_MS: { schema: wholeNumber('must be a whole number of milliseconds, 50 or more', 50).default(30_000) },
  API_KEY_CACHE_MS: { schema: wholeNumber('must be a whole number of milliseconds from 0 to 60000', 0, 60_000).default(1_000) },
  GRAPHQL_WS_MAX_SUBSCRIPTIONS: { schema: wholeNumber('must be a whole number of operations, 1 or more', 1).default(50) },
  GRAPHQL_WS_MAX_SOCKETS_PER_KEY: { schema: wholeNumber('must be a whole number of sockets, 1 or more', 1).default(20) },
  GRAPHQL_WS_MAX_SUBSCRIPTIONS_PER_ACCOUNT: { schema: wholeNumber('must be a whole number of subscriptions, 1 or more', 1).default(100) },
  GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: { schema: wholeNumber('must be a whole number of attempts per minute, 1 or more', 1).default(10) },
  // Webhook delivery tuning; absent means the delivery module's default (docs/webhooks.md).
  WEBHOOK_TIMEOUT_MS: { schema: positiveMs.optional() },
  WEBHOOK_LEASE_MS: { schema: positiveMs.optional() },
  WEBHOOK_RETRY_BASE_MS: { schema: positiveMs.optional() },
  WEBHOOK_RETRY_MAX_MS: { schema: positiveMs.optional() },
  WEBHOOK_RETRY_WINDOW_MS: { schema: positiveMs.optional() },
  WEBHOOK_GONE_WINDOW_MS: { schema: positiveMs.optional() },
  WEBHOOK_POLL_MS: { schema: positiveMs.optional() },
  WEBHOOK_CONCURRENCY: { schema: wholeNumber('must be a whole number of deliveries, 1 or more', 1).optional() },
  WEBHOOK_ENDPOINT_CONCURRENCY: { schema: wholeNumber('must be a whole number of deliveries, 1 or more', 1).optional() },
  MAX_CONNECTIONS: { schema: wholeNumber('must be a whole number of connections, 1 or more', 1).default(1_000) },
  // Unset: 100, or MAX_CONNECTIONS when that is smaller (loadConfig); set, not more than MAX_CONNECTIONS.
  MAX_CONNECTIONS_PER_IP: { schema: wholeNumber('must be a whole number of connections, 1 or more', 1).optional() },
  HEADERS_TIMEOUT_MS: { schema: millis.default(10_000) },
  // Unset: 5000, or HEADERS_TIMEOUT_MS when that is shorter (loadConfig); set, not longer than it.
  TLS_HANDSHAKE_TIMEOUT_MS: { schema: millis.optional() },
  REQUEST_TIMEOUT_MS: { schema: millis.default(30_000) },
  KEEP_ALIVE_TIMEOUT_MS: { schema: millis.default(5_000) },
  // Traces (src/observability/tracing.ts): on when either endpoint is set. The OpenTelemetry SDK
  // reads these and its other standard OTEL_* variables (sampler, batching, headers) itself.
  OTEL_EXPORTER_OTLP_ENDPOINT: { schema: otlpUrl.optional() },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { schema: otlpUrl.optional() },
  // The instrumentations to leave out, by the names OpenTelemetry's Node auto-instrumentation uses.
  OTEL_NODE_DISABLED_INSTRUMENTATIONS: {
    schema: z
      .string()
      .transform((v) => v.split(',').map((name) => name.trim()).filter(Boolean))
      .refine((names) => names.every((name) => (INSTRUMENTATIONS as readonly string[]).includes(name)), {
        error: `must be a comma-separated list of instrumentations to leave out, among ${INSTRUMENTATIONS.join(', ')}`,
      })
      .default([]),
  },
  OTEL_SERVICE_NAME: {
    schema: z.string().trim().regex(/^[^\u0000-\u001f\u007f]{1,255}$/, { error: 'must be a name of 1 to 255 characters on one line, such as payorch-eu' }).default('payorch'),
  },
  // Prometheus metrics: a plain-HTTP listener of their own, and/or GET /metrics on HTTPS behind a token; neither, none.
  METRICS_PORT: { schema: port.optional() },
  METRICS_HOST: { schema: z.string().default('127.0.0.1') },
  METRICS_TOKEN: {
    secret: true,
    schema: z.string().regex(/^[\x21-\x7e]{16,256}$/, { error: 'must be 16 to 256 printable characters without spaces (a bearer token)' }).optional(),
  },
} satisfies Record<string, { schema: z.ZodType; secret?: boolean }>;

type Variable = keyof typeof VARIABLES;

/** The variables `loadConfig` reads (tests hold every one to a readable message). */
export const CONFIG_VARIABLES = Object.keys(VARIABLES) as Variable[];

/** Variables whose value is never quoted back: a key, or a URL that may carry a password. */
export const SECRET_VARIABLES = CONFIG_VARIABLES.filter((name) => (VARIABLES[name] as { secret?: boolean }).secret === true);

const envSchema = z.object(
  Object.fromEntries(CONFIG_VARIABLES.map((name) => [name, VARIABLES[name].schema])) as { [K in Variable]: (typeof VARIABLES)[K]['schema'] },
);

/** A refused value as text for the message: quoted (control characters escaped, one line), long ones cut. */
function quoteValue(value: string): string {
  return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
}

export interface Config {
  databaseUrl: string;
  /** DATABASE_REPLICA_URLS: PostgreSQL standbys for read-only requests (empty: none). */
  databaseReplicaUrls: string[];
  /** A caller that wrote within this reads from the primary (read-your-writes). */
  replicaReadAfterWriteMs: number;
  /** A replica lagging more than this is skipped. */
  replicaMaxLagMs: number;
  /** How long a verified API key is trusted without looking it up again (0: every request). */
  apiKeyCacheMs: number;
  dataDir: string;
  host: string;
  port: number;
  httpPort: number;
  publicUrl?: string;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  redisUrl?: string;
  /** How long a Redis call may take; past it, or failed, Redis is bypassed until it answers again. */
  redisTimeoutMs: number;
  /** Outgoing mail goes over SMTP when set; otherwise it is written as .eml files under DATA_DIR/outbox. */
  smtpUrl?: string;
  mailFrom: string;
  /** Whether MAIL_FROM was given (without it mail goes out from DEFAULT_MAIL_FROM, and start warns when that is over SMTP). */
  mailFromSet: boolean;
  /** ACCOUNT_NAME: the name of the default account made on the first start (an empty database). */
  accountName?: string;
  /** SMTP connect, greeting and socket inactivity timeout: a hung mail server cannot hold the mail worker. */
  smtpTimeoutMs: number;
  /** The billing run's node-cron schedule. */
  billingCron: string;
  billingLeaseMs: number;
  /** How long a pending payment or refund stays its instance's after its last heartbeat (heartbeats come four times a lease); absent, the default (10 s). */
  paymentLeaseMs?: number;
  encryptionKey?: string;
  trustProxy: boolean;
  webhookAllowPrivate: boolean;
  webhookCaFile?: string;
  /**
   * A test-mode gateway's `settings.baseUrl` may reach loopback and private addresses (a local
   * Stripe emulator); otherwise it is held to the webhook address policy.
   */
  gatewayAllowPrivateBaseUrl: boolean;
  idempotencyTtlHours: number;
  logLevel: string;
  runWorkers: boolean;
  defaultRateLimitPerMinute: number;
  /** How often an open GraphQL subscription socket re-checks that its key is still valid. */
  wsKeyRecheckMs: number;
  /** Webhook delivery tuning from WEBHOOK_*; each absent one takes the delivery module's default. */
  webhooks: {
    timeoutMs?: number;
    leaseMs?: number;
    retryBaseMs?: number;
    retryMaxMs?: number;
    retryWindowMs?: number;
    goneWindowMs?: number;
    pollMs?: number;
    concurrency?: number;
    endpointConcurrency?: number;
  };
  /** Open connections each listener (HTTPS, plain HTTP) accepts; more are closed at once. */
  maxConnections: number;
  /**
   * Open connections each listener accepts from one client address (the TCP peer: behind a
   * proxy that is the proxy, whatever TRUST_PROXY says); more are closed at once.
   */
  maxConnectionsPerIp: number;
  /** A connection must finish its TLS handshake within this, from its TCP connect. */
  tlsHandshakeTimeoutMs: number;
  /** Request headers must arrive within this. */
  headersTimeoutMs: number;
  /** A whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Operations one graphql-ws socket may have open at once (subscriptions, and queries or mutations still running). */
  wsMaxSubscriptions: number;
  /** graphql-ws sockets one API key may hold open on one instance. */
  wsMaxSocketsPerKey: number;
  /**
   * Subscriptions one account may have open at once on one instance, over all its keys and
   * sockets: each event runs every subscription's selection, nested lists included.
   */
  wsMaxSubscriptionsPerAccount: number;
  /** graphql-ws connection attempts with a missing or refused key one client address may make a minute. */
  wsFailedConnectsPerMinute: number;
  /**
   * Traces exported over OTLP/HTTP, when OTEL_EXPORTER_OTLP_ENDPOINT or
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; absent, tracing is off.
   */
  tracing?: {
    /** Where spans go: the traces endpoint, or the base endpoint with `/v1/traces`, as the exporter resolves them. */
    endpoint: string;
    serviceName: string;
    /** Instrumentations not loaded (OTEL_NODE_DISABLED_INSTRUMENTATIONS): their modules are left unpatched. */
    disabledInstrumentations: Instrumentation[];
  };
  /** A plain-HTTP listener serving only GET /metrics, on `metricsHost` (0: any free port); none when absent. */
  metricsPort?: number;
  metricsHost: string;
  /** GET /metrics on the HTTPS listener, for `Authorization: Bearer <metricsToken>` only; absent, it is not served there. */
  metricsToken?: string;
}

/** Reads the environment; a bad value throws one line naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue.path[0]) as Variable;
    const got = SECRET_VARIABLES.includes(name) ? '' : ` (got ${quoteValue(String(present[name]))})`;
    throw new ConfigError(`Invalid configuration: ${name} ${issue.message}${got}`);
  }
  const e = parsed.data;
  if ((e.TLS_CERT_FILE && !e.TLS_KEY_FILE) || (!e.TLS_CERT_FILE && e.TLS_KEY_FILE)) {
    throw new ConfigError('Invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  // Behind a proxy the Host a request carries is whatever the client wrote (the proxy passes it
  // on): redirects and `url` fields must come from the operator, not from that header.
  if (e.TRUST_PROXY && !e.PUBLIC_URL) {
    throw new ConfigError('Invalid configuration: TRUST_PROXY=true needs PUBLIC_URL, the https:// address clients reach the service at (redirects and url fields use it)');
  }
  // Node refuses a header timeout longer than the request's: say so in the operator's terms.
  if (e.HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('Invalid configuration: HEADERS_TIMEOUT_MS must not be longer than REQUEST_TIMEOUT_MS');
  }
  // With the defaults one address cannot hold every slot of a listener. Behind a proxy every
  // connection comes from the proxy's address (TRUST_PROXY does not apply to connections), so
  // there the operator raises this, up to MAX_CONNECTIONS.
  if (e.MAX_CONNECTIONS_PER_IP !== undefined && e.MAX_CONNECTIONS_PER_IP > e.MAX_CONNECTIONS) {
    throw new ConfigError(`Invalid configuration: MAX_CONNECTIONS_PER_IP must not be more than MAX_CONNECTIONS (got ${quoteValue(String(present.MAX_CONNECTIONS_PER_IP))}, MAX_CONNECTIONS is ${e.MAX_CONNECTIONS})`);
  }
  // A handshake is part of getting a request's headers in: it may not take longer than them.
  if (e.TLS_HANDSHAKE_TIMEOUT_MS !== undefined && e.TLS_HANDSHAKE_TIMEOUT_MS > e.HEADERS_TIMEOUT_MS) {
    throw new ConfigError(`Invalid configuration: TLS_HANDSHAKE_TIMEOUT_MS must not be longer than HEADERS_TIMEOUT_MS (got ${quoteValue(String(present.TLS_HANDSHAKE_TIMEOUT_MS))}, HEADERS_TIMEOUT_MS is ${e.HEADERS_TIMEOUT_MS})`);
  }
  if (e.METRICS_PORT !== undefined && e.METRICS_PORT !== 0 && (e.METRICS_PORT === e.PORT || e.METRICS_PORT === e.HTTP_PORT)) {
    throw new ConfigError(`Invalid configuration: METRICS_PORT must differ from PORT and HTTP_PORT (got ${quoteValue(String(present.METRICS_PORT))})`);
  }
  const dataDir = path.resolve(e.DATA_DIR);
  const databaseUrl = e.DATABASE_URL ?? `sqlite:${path.join(dataDir, 'payorch.sqlite')}`;
  // Replicas are PostgreSQL streaming standbys of a PostgreSQL primary.
  if (e.DATABASE_REPLICA_URLS && !/^postgres(ql)?:/.test(databaseUrl)) {
    throw new ConfigError('Invalid configuration: DATABASE_REPLICA_URLS needs a PostgreSQL DATABASE_URL (read replicas are streaming standbys of a PostgreSQL primary; the database is SQLite)');
  }
  return {
    databaseUrl,
    databaseReplicaUrls: e.DATABASE_REPLICA_URLS ?? [],
    replicaReadAfterWriteMs: e.REPLICA_READ_AFTER_WRITE_MS,
    replicaMaxLagMs: e.REPLICA_MAX_LAG_MS,
    dataDir,
    host: e.HOST,
    port: e.PORT,
    httpPort: e.HTTP_PORT,
    publicUrl: e.PUBLIC_URL?.replace(/\/$/, ''),
    tlsCertFile: e.TLS_CERT_FILE,
    tlsKeyFile: e.TLS_KEY_FILE,
    redisUrl: e.REDIS_URL,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM.trim(),
    mailFromSet: present.MAIL_FROM !== undefined,
    accountName: e.ACCOUNT_NAME,
    smtpTimeoutMs: e.SMTP_TIMEOUT_MS,
    billingCron: e.BILLING_CRON,
    billingLeaseMs: e.BILLING_LEASE_MS,
    paymentLeaseMs: e.PAYMENT_LEASE_MS,
    encryptionKey: e.ENCRYPTION_KEY,
    trustProxy: e.TRUST_PROXY,
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    webhookCaFile: e.WEBHOOK_CA_FILE,
    gatewayAllowPrivateBaseUrl: e.GATEWAY_ALLOW_PRIVATE_BASE_URL,
    idempotencyTtlHours: e.IDEMPOTENCY_TTL_HOURS,
    logLevel: e.LOG_LEVEL,
    runWorkers: e.RUN_WORKERS,
    defaultRateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    wsKeyRecheckMs: e.GRAPHQL_WS_KEY_RECHECK_MS,
    webhooks: {
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      leaseMs: e.WEBHOOK_LEASE_MS,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      retryMaxMs: e.WEBHOOK_RETRY_MAX_MS,
      retryWindowMs: e.WEBHOOK_RETRY_WINDOW_MS,
      goneWindowMs: e.WEBHOOK_GONE_WINDOW_MS,
      pollMs: e.WEBHOOK_POLL_MS,
      concurrency: e.WEBHOOK_CONCURRENCY,
      endpointConcurrency: e.WEBHOOK_ENDPOINT_CONCURRENCY,
    },
    wsMaxSubscriptions: e.GRAPHQL_WS_MAX_SUBSCRIPTIONS,
    wsMaxSocketsPerKey: e.GRAPHQL_WS_MAX_SOCKETS_PER_KEY,
    wsMaxSubscriptionsPerAccount: e.GRAPHQL_WS_MAX_SUBSCRIPTIONS_PER_ACCOUNT,
    wsFailedConnectsPerMinute: e.GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE,
    apiKeyCacheMs: e.API_KEY_CACHE_MS,
    maxConnections: e.MAX_CONNECTIONS,
    maxConnectionsPerIp: e.MAX_CONNECTIONS_PER_IP ?? Math.min(DEFAULT_MAX_CONNECTIONS_PER_IP, e.MAX_CONNECTIONS),
    tlsHandshakeTimeoutMs: e.TLS_HANDSHAKE_TIMEOUT_MS ?? Math.min(DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS, e.HEADERS_TIMEOUT_MS),
    headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    tracing: tracingConfig(e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, e.OTEL_EXPORTER_OTLP_ENDPOINT, e.OTEL_SERVICE_NAME, e.OTEL_NODE_DISABLED_INSTRUMENTATIONS as Instrumentation[]),
    metricsPort: e.METRICS_PORT,
    metricsHost: e.METRICS_HOST,
    metricsToken: e.METRICS_TOKEN,
  };
}

function tracingConfig(tracesEndpoint: string | undefined, endpoint: string | undefined, serviceName: string, disabledInstrumentations: Instrumentation[]): Config['tracing'] {
  if (tracesEndpoint) return { endpoint: tracesEndpoint, serviceName, disabledInstrumentations };
  if (endpoint) return { endpoint: `${endpoint.replace(/\/$/, '')}/v1/traces`, serviceName, disabledInstrumentations };
  return undefined;
}
