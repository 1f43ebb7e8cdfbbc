import 'reflect-metadata';
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig, type Config } from './config';
import { createServices, type Services } from './services';
import { ensureDefaultAccount } from './bootstrap';
import { startServer } from './server';
import { createLogger } from './logger';
import { DomainError } from './core/errors';

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

async function withServices<T>(fn: (s: Services, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
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
      const server = await startServer(config);
      const { logger } = server.services;
      const created = await ensureDefaultAccount(server.services);
      if (created) {
        process.stdout.write(
          [
            '',
            'Created the default account. These keys are shown only once; keep them safe:',
            `  account:  ${created.accountId}`,
            `  test key: ${created.testKey}`,
            `  live key: ${created.liveKey}`,
            '',
          ].join('\n') + '\n',
        );
      }
      logger.info({ url: server.baseUrl, redirect: server.httpUrl }, 'payorch listening');
      process.stdout.write(`Payorch is listening on ${server.baseUrl} (plain HTTP on ${server.httpUrl} redirects there)\n`);
      let shuttingDown = false;
      const shutdown = (signal: string) => {
        if (shuttingDown) return;
        shuttingDown = true;
        logger.info({ signal }, 'shutting down');
        const force = setTimeout(() => process.exit(1), 25_000);
        force.unref();
        server.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.on('SIGTERM', () => shutdown('SIGTERM'));
      process.on('SIGINT', () => shutdown('SIGINT'));
    });

  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(() => withServices(async () => {
      process.stdout.write('migrations are up to date\n');
    }));

  const accounts = program.command('accounts').description('manage accounts');
  accounts
    .command('create')
    .requiredOption('--name <name>', 'account name')
    .option('--rate-limit <n>', 'requests per minute for this account', positiveInt)
    .option('--json', 'print {"accountId","testKey","liveKey"} as JSON')
    .action((opts: { name: string; rateLimit?: number; json?: boolean }) =>
      withServices(async (s) => {
        const created = await s.accounts.createAccount({ name: opts.name, rateLimitPerMinute: opts.rateLimit ?? null });
        const out = { accountId: created.accountId, testKey: created.testKey.secret, liveKey: created.liveKey.secret };
        if (opts.json) process.stdout.write(`${JSON.stringify(out)}\n`);
        else process.stdout.write(`account:  ${out.accountId}\ntest key: ${out.testKey}\nlive key: ${out.liveKey}\n(keys are shown only once)\n`);
      }),
    );
  accounts
    .command('set-rate-limit')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--rate-limit <n>', 'requests per minute', positiveInt)
    .action((opts: { account: string; rateLimit: number }) =>
      withServices(async (s) => {
        await s.accounts.setRateLimit(opts.account, opts.rateLimit);
        process.stdout.write('rate limit updated\n');
      }),
    );

  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--mode <mode>', 'test or live', (v) => {
      if (v !== 'test' && v !== 'live') throw new InvalidArgumentError('must be test or live');
      return v;
    })
    .option('--permissions <list>', 'comma-separated, e.g. payments:read,customers:write', (v) => v.split(',').map((p) => p.trim()).filter(Boolean))
    .option('--name <name>', 'a label for the key')
    .option('--json', 'print the key as JSON')
    .action((opts: { account: string; mode: 'test' | 'live'; permissions?: string[]; name?: string; json?: boolean }) =>
      withServices(async (s) => {
        const key = await s.accounts.createKeyForAccount(opts.account, opts.mode, opts.permissions ?? ['*'], opts.name);
        if (opts.json) process.stdout.write(`${JSON.stringify({ id: key.id, key: key.secret, mode: opts.mode, permissions: key.permissions })}\n`);
        else process.stdout.write(`key id: ${key.id}\nkey:    ${key.secret}\n(shown only once)\n`);
      }),
    );
  keys
    .command('revoke <keyId>')
    .action((keyId: string) =>
      withServices(async (s) => {
        await s.accounts.revokeKeyById(keyId);
        process.stdout.write(`revoked ${keyId}\n`);
      }),
    );
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof DomainError) {
      process.stderr.write(`payorch: ${err.message}\n`);
      process.exit(2);
    }
    const e = err as { name?: string; message?: string };
    process.stderr.write(`payorch: ${e.name ?? 'Error'}: ${e.message ?? String(err)}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main(process.argv);
