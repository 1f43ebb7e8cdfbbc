import path from 'node:path';
import { z } from 'zod';

export class ConfigError extends Error {}

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const port = z.coerce
  .number({ error: 'must be a port number' })
  .int({ error: 'must be a port number' })
  .min(0, { error: 'must be a port number' })
  .max(65535, { error: 'must be a port number' });

const envSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^(postgres|postgresql|sqlite):/, { error: 'must start with postgres://, postgresql:// or sqlite:' })
    .optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: port.default(8443),
  HTTP_PORT: port.default(8080),
  PUBLIC_URL: z.url({ error: 'must be an absolute URL' }).optional(),
  TLS_CERT_FILE: z.string().optional(),
  TLS_KEY_FILE: z.string().optional(),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, { error: 'must start with redis:// or rediss://' }).optional(),
  SMTP_URL: z.string().optional(),
  MAIL_FROM: z.string().optional(),
  ENCRYPTION_KEY: z
    .string()
    .regex(/^(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$/, { error: 'must be 32 bytes as 64 hex characters or base64' })
    .optional(),
  TRUST_PROXY: bool.default(false),
  WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  WEBHOOK_CA_FILE: z.string().optional(),
  IDEMPOTENCY_TTL_HOURS: z.coerce.number({ error: 'must be a number of hours' }).positive({ error: 'must be positive' }).default(24),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RUN_WORKERS: bool.default(true),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(100),
  GRAPHQL_WS_KEY_RECHECK_MS: z.coerce.number().int().min(50).default(30_000),
  GRAPHQL_WS_MAX_SUBSCRIPTIONS: z.coerce.number().int().positive().default(50),
  GRAPHQL_WS_MAX_SOCKETS_PER_KEY: z.coerce.number().int().positive().default(20),
  GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: z.coerce.number().int().positive().default(10),
  API_KEY_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
});

export interface Config {
  databaseUrl: string;
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
  smtpUrl?: string;
  mailFrom?: string;
  encryptionKey?: string;
  trustProxy: boolean;
  webhookAllowPrivate: boolean;
  webhookCaFile?: string;
  idempotencyTtlHours: number;
  logLevel: string;
  runWorkers: boolean;
  defaultRateLimitPerMinute: number;
  /** How often an open GraphQL subscription socket re-checks that its key is still valid. */
  wsKeyRecheckMs: number;
  /** Operations one graphql-ws socket may have open at once (subscriptions, and queries or mutations still running). */
  wsMaxSubscriptions: number;
  /** graphql-ws sockets one API key may hold open on one instance. */
  wsMaxSocketsPerKey: number;
  /** graphql-ws connection attempts with a missing or refused key one client address may make a minute. */
  wsFailedConnectsPerMinute: number;
}

/** Reads the environment; a bad value throws one line naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`Invalid configuration: ${String(issue.path[0])} ${issue.message}`);
  }
  const e = parsed.data;
  if ((e.TLS_CERT_FILE && !e.TLS_KEY_FILE) || (!e.TLS_CERT_FILE && e.TLS_KEY_FILE)) {
    throw new ConfigError('Invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  const dataDir = path.resolve(e.DATA_DIR);
  return {
    databaseUrl: e.DATABASE_URL ?? `sqlite:${path.join(dataDir, 'payorch.sqlite')}`,
    dataDir,
    host: e.HOST,
    port: e.PORT,
    httpPort: e.HTTP_PORT,
    publicUrl: e.PUBLIC_URL?.replace(/\/$/, ''),
    tlsCertFile: e.TLS_CERT_FILE,
    tlsKeyFile: e.TLS_KEY_FILE,
    redisUrl: e.REDIS_URL,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    encryptionKey: e.ENCRYPTION_KEY,
    trustProxy: e.TRUST_PROXY,
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    webhookCaFile: e.WEBHOOK_CA_FILE,
    idempotencyTtlHours: e.IDEMPOTENCY_TTL_HOURS,
    logLevel: e.LOG_LEVEL,
    runWorkers: e.RUN_WORKERS,
    defaultRateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    wsKeyRecheckMs: e.GRAPHQL_WS_KEY_RECHECK_MS,
    wsMaxSubscriptions: e.GRAPHQL_WS_MAX_SUBSCRIPTIONS,
    wsMaxSocketsPerKey: e.GRAPHQL_WS_MAX_SOCKETS_PER_KEY,
    wsFailedConnectsPerMinute: e.GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE,
    apiKeyCacheMs: e.API_KEY_CACHE_MS,
  };
}
