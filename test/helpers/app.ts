import 'reflect-metadata';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../src/config';
import { startServer, type RunningServer, type StartOptions } from '../../src/server';
import { createLogger } from '../../src/logger';
import type { Clock } from '../../src/core/clock';
import { migratedDatabaseCopy, type TestDatabase } from './db';
import { httpsRequest, type HttpResponse, type RequestOptions } from './http';

export interface TestAccount {
  accountId: string;
  testKey: string;
  liveKey: string;
}

export interface TestApp {
  server: RunningServer;
  config: Config;
  baseUrl: string;
  httpUrl: string;
  account: TestAccount;
  logs: string[];
  sql: string[];
  request(method: string, path: string, opts?: RequestOptions): Promise<HttpResponse>;
  createAccount(opts?: { rateLimitPerMinute?: number }): Promise<TestAccount>;
  stop(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** Share a database with another app (multi-instance tests); it is then not dropped here. */
  database?: TestDatabase;
  runWorkers?: boolean;
  rateLimitPerMinute?: number;
  routingRng?: () => number;
  /** Passed to the services as they are (webhook schedule overrides and the like). */
  serviceOptions?: Partial<StartOptions>;
}

// sequelize-typescript binds model classes to one Sequelize instance per process, so a test
// process runs one app at a time; a second instance runs in its own process (spawnInstance).
let liveApp = false;

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  if (liveApp) throw new Error('one test app per process: stop the previous one or use spawnInstance()');
  liveApp = true;
  const ownsDatabase = !options.database;
  const database = options.database ?? (await migratedDatabaseCopy());
  // The certificate and encryption key live beside the database and go with it: apps sharing a
  // database share the key that reads its webhook secrets, and nothing is left in /tmp.
  const config = loadConfig({
    DATABASE_URL: database.url,
    DATA_DIR: database.dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    HTTP_PORT: '0',
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: String(options.rateLimitPerMinute ?? 100_000),
    // Every test connects from 127.0.0.1, and with REDIS_URL the count is shared by all test processes.
    GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: '100000',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...(options.env ?? {}),
  });
  const logs: string[] = [];
  const sql: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const server = await startServer(config, {
    clock: options.clock,
    logger: createLogger('info', sink),
    onSql: (s) => sql.push(s),
    runWorkers: options.runWorkers ?? false,
    routingRng: options.routingRng,
    ...(options.serviceOptions ?? {}),
  });
  const request = (method: string, p: string, opts?: RequestOptions) => httpsRequest(server.baseUrl, server.cert, method, p, opts);
  const createAccount = async (opts: { rateLimitPerMinute?: number } = {}) => {
    const created = await server.services.accounts.createAccount({ name: 'Test account', rateLimitPerMinute: opts.rateLimitPerMinute ?? null });
    return { accountId: created.accountId, testKey: created.testKey.secret!, liveKey: created.liveKey.secret! };
  };
  const account = await createAccount();
  return {
    server,
    config,
    baseUrl: server.baseUrl,
    httpUrl: server.httpUrl,
    account,
    logs,
    sql,
    request,
    createAccount,
    async stop() {
      await server.stop();
      liveApp = false;
      if (ownsDatabase) await database.drop();
    },
  };
}
