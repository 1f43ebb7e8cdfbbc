import 'reflect-metadata';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { FixedClock } from '../../src/core/clock';
import type { Mode, RequestContext } from '../../src/core/context';
import { DomainError } from '../../src/core/errors';
import { createServices, type ServiceOptions, type Services } from '../../src/services';
import { migratedDatabaseCopy, type TestDatabase } from './db';

/**
 * The service tier: the composition root (createServices) on a fresh, migrated database, with a
 * fixed clock and no transport. Tests call service methods with a RequestContext, as a route or
 * resolver would, so a rule is checked once here instead of through HTTPS.
 */
export interface ServiceHarness {
  services: Services;
  clock: FixedClock;
  /** Log lines the services wrote (kept off the console). */
  logs: string[];
  /** A new account; `test` and `live` act for it as its default keys would. */
  account(): Promise<TestAccountContexts>;
  stop(): Promise<void>;
}

export interface TestAccountContexts {
  accountId: string;
  test: RequestContext;
  live: RequestContext;
}

export const START = new Date('2026-11-01T10:00:00.000Z');

// sequelize-typescript binds model classes to one Sequelize instance per process (see app.ts).
let live = false;

export async function startServices(
  options: { env?: Record<string, string>; services?: ServiceOptions; /** Runs on the database before the services start. */ beforeCreate?: (url: string) => Promise<void> } = {},
): Promise<ServiceHarness> {
  if (live) throw new Error('one service harness per process: stop the previous one first');
  live = true;
  let database: TestDatabase | undefined;
  try {
    database = await migratedDatabaseCopy();
    const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: database.dataDir, LOG_LEVEL: 'info', ...(options.env ?? {}) });
    const clock = new FixedClock(START);
    const logs: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        logs.push(String(chunk));
        cb();
      },
    });
    await options.beforeCreate?.(database.url);
    const services = await createServices(config, { clock, logger: createLogger('info', sink), ...(options.services ?? {}) });
    const db = database;
    return {
      services,
      clock,
      logs,
      account: async () => {
        const created = await services.accounts.createAccount({ name: 'Service test account' });
        const context = (mode: Mode, keyId: string): RequestContext => ({
          accountId: created.accountId, mode, permissions: ['*'], requestId: `req_${randomBytes(6).toString('hex')}`, keyId, clock,
        });
        return { accountId: created.accountId, test: context('test', created.testKey.id), live: context('live', created.liveKey.id) };
      },
      async stop() {
        await services.close();
        await db.drop();
        live = false;
      },
    };
  } catch (err) {
    await database?.drop();
    live = false;
    throw err;
  }
}

/** The same context with other permissions (as a restricted API key would have). */
export function withPermissions(ctx: RequestContext, permissions: string[]): RequestContext {
  return { ...ctx, permissions };
}

/**
 * What a service call was refused with, as both transports would report it: code, param and
 * HTTP status. Fails the test when the call succeeds or throws anything but a DomainError.
 */
export async function refusal(call: Promise<unknown>): Promise<{ code: string; param: string | undefined; status: number }> {
  let outcome: unknown;
  try {
    outcome = await call;
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return { code: err.code, param: err.param, status: err.status };
  }
  throw new Error(`expected a DomainError, got a result: ${JSON.stringify(outcome)?.slice(0, 200)}`);
}
