import 'reflect-metadata';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig, type Config } from './config';
import { createServices, type Services } from './services';
import { ensureDefaultAccount, nameCommand } from './bootstrap';
import { startServer } from './server';
import { createLogger } from './logger';
import { stopTracing, tracingEndpoint } from './observability/tracing';
import { DomainError, isDomainError } from './core/errors';
import { Database, sqliteStorage } from './db/database';
import { MODELS } from './db/models';
import { createMigrator } from './db/migrator';
import { permissionsSchema } from './modules/accounts/account.service';
import { newAccountPartyInput } from './modules/accounts/account.inputs';

/** A command's input refused in the user's terms: one line, exit code 2, like a bad configuration. */
class CliError extends Error {}

/** The largest rate limit the database column holds (a 32-bit integer). */
const MAX_RATE_LIMIT = 2_147_483_647;

const rateLimit = (value: string) => {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1 || n > MAX_RATE_LIMIT) {
    throw new InvalidArgumentError(`must be a whole number of requests per minute, from 1 to ${MAX_RATE_LIMIT}`);
  }
  return n;
};

/** Names as the database holds them: at most 200 characters. */
const nameOption = (value: string) => {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  if (value.length > 200) throw new InvalidArgumentError(`must be at most 200 characters (got ${value.length})`);
  return value;
};

/** `--permissions a:read,b:write`, each checked here so a mistake names the option and the entry. */
const permissionList = (value: string) => {
  const list = value.split(',').map((p) => p.trim()).filter(Boolean);
  if (list.length === 0) throw new InvalidArgumentError('list at least one permission, e.g. customers:read or "*"');
  const checked = permissionsSchema.safeParse(list);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const at = issue.path[0];
    throw new InvalidArgumentError(typeof at === 'number' ? `'${list[at]}': ${issue.message}` : `at most 64 permissions (got ${list.length})`);
  }
  return checked.data;
};

/** `accounts create`'s options for the seller's block on invoices, by the field each sets. */
const PARTY_OPTIONS = {
  'address.line1': '--address-line1',
  'address.line2': '--address-line2',
  'address.postalCode': '--address-postal-code',
  'address.city': '--address-city',
  'address.state': '--address-state',
  'address.country': '--address-country',
  taxId: '--tax-id',
  supportEmail: '--support-email',
} as const;

interface PartyOptions {
  addressLine1?: string; addressLine2?: string; addressPostalCode?: string; addressCity?: string; addressState?: string; addressCountry?: string;
  taxId?: string; supportEmail?: string;
}

/**
 * The account's address, tax id and support e-mail from `accounts create`'s options, checked as
 * PATCH /v1/account checks them; a refusal names the option (one line, exit code 2).
 */
function accountParty(opts: PartyOptions): { address?: unknown; taxId?: string; supportEmail?: string } {
  const address = { line1: opts.addressLine1, line2: opts.addressLine2, postalCode: opts.addressPostalCode, city: opts.addressCity, state: opts.addressState, country: opts.addressCountry };
  const given = {
    address: Object.values(address).some((v) => v !== undefined) ? { ...address, postalCode: address.postalCode ?? '' } : undefined,
    taxId: opts.taxId,
    supportEmail: opts.supportEmail,
  };
  const input = JSON.parse(JSON.stringify(given)) as Record<string, unknown>;
  const checked = newAccountPartyInput.safeParse(input);
  if (checked.success) return input;
  const issue = checked.error.issues[0];
  const field = issue.path.join('.') as keyof typeof PARTY_OPTIONS;
  const option = PARTY_OPTIONS[field] ?? '--address-…';
  const missing = issue.code === 'invalid_type' && issue.input === undefined;
  throw new CliError(missing
    ? `${option} is needed with the other --address-… options (an address has line1, city and country; line2, postal code and state are optional)`
    : `${option}: ${issue.message}`);
}

const quote = (id: string) => JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id);

/** The service's "not found", in the CLI's terms: what was not found, the option that named it, where to look. */
async function explainNotFound<T>(what: 'account' | 'key', id: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!isDomainError(err) || err.code !== 'resource_not_found') throw err;
    if (what === 'account') throw new CliError(`--account ${quote(id)}: no such account in this database (\`payorch accounts list\` shows them)`);
    throw new CliError(`no API key ${quote(id)} in this database (\`payorch keys list --account <id>\` shows an account's keys)`);
  }
}

/** Connection parameters that hold secrets when given in a PostgreSQL URL's query string. */
const SECRET_PARAMETERS = ['password', 'sslpassword', 'sslkey'];

/** The database URL with any password hidden (a SQLite URL as given: relative paths stay relative). */
export function describeDatabase(databaseUrl: string): string {
  if (databaseUrl.startsWith('sqlite:')) return databaseUrl;
  try {
    const url = new URL(databaseUrl);
    if (url.password) url.password = '***';
    for (const name of SECRET_PARAMETERS) if (url.searchParams.has(name)) url.searchParams.set(name, '***');
    return url.toString();
  } catch {
    return databaseUrl.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}

/** The SQLite file the configuration names (absolute), or null for PostgreSQL and in-memory SQLite. */
function sqliteFile(config: Config): string | null {
  if (!config.databaseUrl.startsWith('sqlite:')) return null;
  const file = sqliteStorage(config.databaseUrl);
  return file === ':memory:' || file.startsWith('file:') ? null : path.resolve(file);
}

/**
 * What a command does with a database that does not exist yet. `serve` (start, migrate) makes it:
 * that is their job. `create` (accounts create) makes it too, with a warning, as a CLI run from
 * another directory or without the server's DATA_DIR would otherwise fill a database the server
 * never reads. `existing` (every other command: each reads or changes what is already there)
 * refuses before anything is created, neither file nor data directory nor key.
 */
type DatabaseUse = 'serve' | 'create' | 'existing';

/** One line on stderr naming the database a command is about to use, or the refusal of `existing`. */
function announceDatabase(config: Config, use: DatabaseUse): void {
  const file = sqliteFile(config);
  const fresh = file !== null && !fs.existsSync(file);
  if (fresh && use === 'existing') {
    throw new CliError(
      `no database at ${file} (nothing was created): run this command with the server's DATA_DIR or DATABASE_URL, `
        + 'or from the directory the server runs in',
    );
  }
  const note = !fresh ? '' : use === 'serve' ? ' (new file)' : ' (new file: not the server\'s database? set DATA_DIR or DATABASE_URL)';
  process.stderr.write(`payorch: database ${describeDatabase(config.databaseUrl)}${note}\n`);
}

/** Binds and releases a port: refused at once if something listens there (EADDRINUSE, EACCES). */
function probePort(port: number, host: string): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/**
 * Checked before the database is opened or migrated: a busy port is one line naming the
 * variable to change, not a stack trace after the migrations ran.
 */
async function requireFreePorts(config: Config): Promise<void> {
  if (config.port !== 0 && config.port === config.httpPort) {
    throw new ConfigError(`Invalid configuration: PORT and HTTP_PORT are both ${config.port}; give them different ports`);
  }
  const ports: Array<[string, number | undefined, string]> = [['PORT', config.port, config.host], ['HTTP_PORT', config.httpPort, config.host], ['METRICS_PORT', config.metricsPort, config.metricsHost]];
  for (const [variable, port, host] of ports) {
    if (port === undefined || port === 0) continue;
    const err = await probePort(port, host);
    if (err?.code === 'EADDRINUSE') {
      throw new ConfigError(`port ${port} on ${host} is already in use (${variable}): stop what listens there or set ${variable} to a free port`);
    }
    if (err?.code === 'EACCES') throw new ConfigError(`port ${port} on ${host} needs privileges this user lacks (${variable}): set ${variable} to a port above 1023`);
    if (err) throw new ConfigError(`cannot listen on ${host}:${port} (${variable}): ${err.message}`);
  }
}

async function withServices<T>(use: DatabaseUse, fn: (s: Services, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  announceDatabase(config, use);
  const services = await createServices(config, { logger: createLogger('warn') });
  try {
    return await fn(services, config);
  } finally {
    await services.close();
  }
}

export function buildCli(): Command {
  const program = new Command('payorch').description('Payorch payment orchestration service');

  program
    .command('start')
    .description('run migrations, then serve HTTPS (and the HTTP redirect) with the workers')
    .action(async () => {
      const config = loadConfig();
      await requireFreePorts(config);
      announceDatabase(config, 'serve');
      const server = await startServer(config);
      const { logger } = server.services;
      const created = await ensureDefaultAccount(server.services, config.accountName);
      if (created) {
        const named = config.accountName !== undefined;
        process.stdout.write(
          [
            '',
            `Created the default account${named ? ` "${created.name}"` : ''}. These keys are shown only once; keep them safe:`,
            `  account:  ${created.accountId}`,
            `  test key: ${created.testKey}`,
            `  live key: ${created.liveKey}`,
            '',
            ...(named
              ? []
              : [
                  `Its name is "${created.name}" until you give it yours (invoices, e-mails and payment pages show it):`,
                  `  ${nameCommand(server.baseUrl, created.testKey)}`,
                  '(or set ACCOUNT_NAME before the first start)',
                  '',
              ]),
          ].join('\n') + '\n',
        );
      }
      const traces = tracingEndpoint();
      if (traces) logger.info({ endpoint: traces }, 'traces exported over OTLP/HTTP');
      logger.info({ url: server.baseUrl, redirect: server.httpUrl, metrics: server.metricsUrl }, 'payorch listening');
      process.stdout.write(`Payorch is listening on ${server.baseUrl} (plain HTTP on ${server.httpUrl} redirects there)\n`);
      if (server.metricsUrl) process.stdout.write(`Prometheus metrics on ${server.metricsUrl}\n`);
      let shuttingDown = false;
      const shutdown = (signal: string) => {
        if (shuttingDown) return;
        shuttingDown = true;
        logger.info({ signal }, 'shutting down');
        const force = setTimeout(() => process.exit(1), 25_000);
        force.unref();
        // Exit only once the log lines are written: an asynchronous write still in flight on
        // libuv's pool is dropped by process.exit, and with it the last words of the process.
        const exit = (code: number) => logger.flush(() => process.exit(code));
        // The spans still buffered go out last, those of the requests just finished included.
        server.stop().then(stopTracing).then(
          () => exit(0),
          () => exit(1),
        );
      };
      process.on('SIGTERM', () => shutdown('SIGTERM'));
      process.on('SIGINT', () => shutdown('SIGINT'));
    });

  program
    .command('migrate')
    .description('apply pending database migrations (creates a SQLite database that does not exist yet)')
    .action(async () => {
      const config = loadConfig();
      announceDatabase(config, 'serve');
      // Only the database: no services, so no encryption key is made for a migration.
      const db = new Database({ url: config.databaseUrl, models: MODELS });
      try {
        await db.init();
        const migrator = createMigrator(db);
        const applied = (await migrator.up()).map((m) => m.name);
        const total = (await migrator.executed()).length;
        if (applied.length === 0) process.stdout.write(`no pending migrations: all ${total} were already applied\n`);
        else process.stdout.write(`applied ${applied.length} migration${applied.length === 1 ? '' : 's'} (${total} in all):\n${applied.map((n) => `  ${n}\n`).join('')}`);
      } finally {
        await db.close();
      }
    });

  const accounts = program.command('accounts').description('manage accounts');
  accounts
    .command('create')
    .description('create an account with a test key and a live key (printed once); creates the database if there is none')
    .requiredOption('--name <name>', 'account name', nameOption)
    .option('--rate-limit <n>', 'requests per minute for this account, in each mode', rateLimit)
    .option('--address-line1 <text>', "the account's address, printed on invoices as the seller's: street and number")
    .option('--address-line2 <text>', 'address: a second line (building, floor), if any')
    .option('--address-postal-code <code>', 'address: postal code (leave out where the country has none)')
    .option('--address-city <city>', 'address: city')
    .option('--address-state <state>', 'address: state, county or province, where the post uses one')
    .option('--address-country <code>', 'address: ISO 3166-1 alpha-2 country code, e.g. DE')
    .option('--tax-id <id>', "the account's tax id (e.g. its VAT number), printed on invoices")
    .option('--support-email <email>', 'where customers write with questions, printed on invoices')
    .option('--json', 'print {"accountId","testKey","liveKey"} as JSON')
    .action((opts: { name: string; rateLimit?: number; json?: boolean } & PartyOptions) => {
      // Checked before the database is opened: a mistake creates nothing.
      const party = accountParty(opts);
      return withServices('create', async (s) => {
        const created = await s.accounts.createAccount({ name: opts.name, rateLimitPerMinute: opts.rateLimit ?? null, ...party });
        const out = { accountId: created.accountId, testKey: created.testKey.secret, liveKey: created.liveKey.secret };
        if (opts.json) process.stdout.write(`${JSON.stringify(out)}\n`);
        else process.stdout.write(`account:  ${out.accountId}\ntest key: ${out.testKey}\nlive key: ${out.liveKey}\n(keys are shown only once)\n`);
      });
    });
  accounts
    .command('list')
    .description('list every account (ids and names; keys are listed with `keys list`)')
    .option('--json', 'print an array of {id, name, rateLimitPerMinute, createdAt}')
    .action((opts: { json?: boolean }) =>
      withServices('existing', async (s) => {
        const all = await s.accounts.listAccounts();
        if (opts.json) process.stdout.write(`${JSON.stringify(all)}\n`);
        else if (all.length === 0) process.stdout.write('no accounts\n');
        else for (const a of all) process.stdout.write(`${a.id}  ${a.createdAt}  ${a.name}${a.rateLimitPerMinute === null ? '' : `  (${a.rateLimitPerMinute}/min)`}\n`);
      }),
    );
  accounts
    .command('set-rate-limit')
    .description("change an account's requests per minute (each mode's budget, shared by that mode's keys)")
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--rate-limit <n>', 'requests per minute', rateLimit)
    .action((opts: { account: string; rateLimit: number }) =>
      withServices('existing', async (s) => {
        await explainNotFound('account', opts.account, () => s.accounts.setRateLimit(opts.account, opts.rateLimit));
        process.stdout.write('rate limit updated\n');
      }),
    );

  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create')
    .description('create an API key for an account (its secret is printed once)')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--mode <mode>', 'test or live', (v) => {
      if (v !== 'test' && v !== 'live') throw new InvalidArgumentError('must be test or live');
      return v;
    })
    .option('--permissions <list>', 'comma-separated, e.g. payments:read,customers:write (default "*": everything)', permissionList)
    .option('--name <name>', 'a label for the key', nameOption)
    .option('--json', 'print the key as JSON')
    .action((opts: { account: string; mode: 'test' | 'live'; permissions?: string[]; name?: string; json?: boolean }) =>
      withServices('existing', async (s) => {
        const key = await explainNotFound('account', opts.account, () =>
          s.accounts.createKeyForAccount(opts.account, opts.mode, opts.permissions ?? ['*'], opts.name));
        // `secret`, as the REST API names it.
        if (opts.json) process.stdout.write(`${JSON.stringify({ id: key.id, secret: key.secret, mode: opts.mode, permissions: key.permissions })}\n`);
        else process.stdout.write(`key id: ${key.id}\nsecret: ${key.secret}\n(shown only once)\n`);
      }),
    );
  keys
    .command('list')
    .description("an account's keys in both modes (hints only: a secret is shown once, when created)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print an array of API keys as the REST API shows them, plus mode')
    .action((opts: { account: string; json?: boolean }) =>
      withServices('existing', async (s) => {
        const list = (await explainNotFound('account', opts.account, () => s.accounts.listKeysForAccount(opts.account))).map((k) => ({ ...k, mode: k.livemode ? 'live' : 'test' }));
        if (opts.json) process.stdout.write(`${JSON.stringify(list)}\n`);
        else for (const k of list) {
          process.stdout.write(`${k.id}  ${k.mode}  ${k.keyHint}  ${k.revoked ? 'revoked' : 'active'}  ${k.permissions.join(',')}${k.name ? `  ${k.name}` : ''}\n`);
        }
      }),
    );
  keys
    .command('revoke')
    .description('revoke an API key (a running server refuses it within API_KEY_CACHE_MS)')
    .argument('<keyId>', 'the key\'s id (key_…), as `keys list` shows it')
    .action((keyId: string) =>
      withServices('existing', async (s) => {
        await explainNotFound('key', keyId, () => s.accounts.revokeKeyById(keyId));
        process.stdout.write(`revoked ${keyId}\n`);
      }),
    );
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof CliError || err instanceof DomainError) {
      process.stderr.write(`payorch: ${err.message}\n`);
      process.exit(2);
    }
    const e = err as { name?: string; message?: string };
    process.stderr.write(`payorch: ${e.name ?? 'Error'}: ${e.message ?? String(err)}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main(process.argv);
