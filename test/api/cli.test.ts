import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { startTestApp, type TestApp } from '../helpers/app';
import { freshDatabase } from '../helpers/db';
import { waitFor } from '../helpers/wait';
import { buildCli, describeDatabase } from '../../src/cli';
import { MAX_ACTIVE_KEYS } from '../../src/modules/accounts/account.service';

const run = promisify(execFile);
const BIN = path.join(__dirname, '..', '..', 'bin', 'payorch.js');

let app: TestApp;
beforeAll(async () => {
  // Keys verified by the server are trusted for this long; a CLI revocation (another process)
  // takes effect within it.
  app = await startTestApp({ env: { API_KEY_CACHE_MS: '300' } });
});
afterAll(() => app.stop());

const cli = (args: string[], env: Record<string, string> = {}) =>
  run(process.execPath, [BIN, ...args], { env: { ...process.env, PAYORCH_FROM_SOURCE: '', DATABASE_URL: app.config.databaseUrl, DATA_DIR: app.config.dataDir, ...env } });

describe('payorch CLI', () => {
  it('should create an account with --json printing exactly {accountId, testKey, liveKey}, with a rate limit', async () => {
    const { stdout } = await cli(['accounts', 'create', '--name', 'Acme', '--rate-limit', '2', '--json']);
    const out = JSON.parse(stdout);
    expect(Object.keys(out)).toEqual(['accountId', 'testKey', 'liveKey']);
    expect(out.testKey).toMatch(/^sk_test_/);
    expect(out.liveKey).toMatch(/^sk_live_/);
    const ok = await app.request('GET', '/v1/customers', { key: out.testKey });
    expect(ok.status).toBe(200);
    expect(ok.headers['ratelimit-limit']).toBe('2');
  }, 60_000);

  it('should create a restricted key and revoke it', async () => {
    const { stdout } = await cli(['keys', 'create', '--account', app.account.accountId, '--mode', 'live', '--permissions', 'customers:read', '--json']);
    const key = JSON.parse(stdout);
    // One name for the secret, as REST has it.
    expect(Object.keys(key)).toEqual(['id', 'secret', 'mode', 'permissions']);
    expect(key.secret).toMatch(/^sk_live_/);
    expect((await app.request('GET', '/v1/customers', { key: key.secret })).status).toBe(200);
    expect((await app.request('POST', '/v1/customers', { key: key.secret, body: { email: 'cli@example.com' } })).status).toBe(403);
    // Just used, so the server holds the key as verified; the CLI is another process.
    expect((await app.request('GET', '/v1/customers', { key: key.secret })).status).toBe(200);
    await cli(['keys', 'revoke', key.id]);
    // Refused within API_KEY_CACHE_MS of the revocation.
    const refused = await waitFor(async () => {
      const res = await app.request('GET', '/v1/customers', { key: key.secret });
      return res.status === 200 ? null : res;
    }, { timeoutMs: app.config.apiKeyCacheMs + 50, intervalMs: 25, what: 'the revoked key to be refused' });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_api_key');
  }, 60_000);

  it('should refuse keys create past the active-key cap with one line and exit code 2', async () => {
    const account = await app.createAccount();
    for (let i = 2; i < MAX_ACTIVE_KEYS; i++) await app.server.services.accounts.createKeyForAccount(account.accountId, 'test');
    const refused = await cli(['keys', 'create', '--account', account.accountId, '--mode', 'live']).then(
      () => null,
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(refused?.code).toBe(2);
    expect(refused?.stdout).toBe('');
    expect(refused?.stderr).toContain(`payorch: At most ${MAX_ACTIVE_KEYS} active API keys per account (both modes); revoke one first\n`);
  }, 60_000);

  it('should change an account rate limit with accounts set-rate-limit', async () => {
    const account = await app.createAccount();
    await cli(['accounts', 'set-rate-limit', '--account', account.accountId, '--rate-limit', '7']);
    const res = await app.request('GET', '/v1/customers', { key: account.testKey });
    expect(res.headers['ratelimit-limit']).toBe('7');
    const missing = await cli(['accounts', 'set-rate-limit', '--account', 'acct_nope', '--rate-limit', '7']).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(missing?.code).toBe(2);
    expect(missing!.stderr).toContain('\npayorch: --account "acct_nope": no such account in this database (`payorch accounts list` shows them)\n');
  }, 60_000);

  it('should create an account with its address, tax id and support e-mail, --json still exactly {accountId, testKey, liveKey}', async () => {
    const { stdout } = await cli([
      'accounts', 'create', '--name', 'Acme Tools GmbH', '--address-line1', 'Friedrichstraße 68', '--address-postal-code', '10117',
      '--address-city', 'Berlin', '--address-country', 'de', '--tax-id', 'DE123456789', '--support-email', 'billing@acme.example', '--json',
    ]);
    const out = JSON.parse(stdout);
    expect(Object.keys(out)).toEqual(['accountId', 'testKey', 'liveKey']);
    const account = await app.request('GET', '/v1/account', { key: out.testKey });
    expect(account.body.data).toMatchObject({
      id: out.accountId, name: 'Acme Tools GmbH', taxId: 'DE123456789', supportEmail: 'billing@acme.example',
      address: { line1: 'Friedrichstraße 68', line2: null, postalCode: '10117', city: 'Berlin', state: null, country: 'DE' },
    });
    // Without them, none is set.
    const plain = JSON.parse((await cli(['accounts', 'create', '--name', 'Plain', '--json'])).stdout);
    expect((await app.request('GET', '/v1/account', { key: plain.testKey })).body.data).toMatchObject({ address: null, taxId: null, supportEmail: null });
  }, 60_000);

  it('should refuse a bad address, tax id or e-mail naming the option, exiting 2 and creating no account', async () => {
    const before = (await app.server.services.accounts.listAccounts()).length;
    const address = ['--address-line1', 'Friedrichstraße 68', '--address-city', 'Berlin', '--address-country', 'DE'];
    for (const [args, line] of [
      [[...address.slice(0, 4), '--address-country', 'Germany'], 'payorch: --address-country: must be an ISO 3166-1 alpha-2 country code, such as DE or GB'],
      [address.slice(0, 2), 'payorch: --address-city is needed with the other --address-… options'],
      [['--support-email', 'not-an-address'], 'payorch: --support-email: must be an e-mail address'],
      [['--tax-id', 'x'.repeat(65)], 'payorch: --tax-id: must be at most 64 characters'],
    ] as const) {
      const refused = await cli(['accounts', 'create', '--name', 'Refused', ...args, '--json']).then(
        () => null,
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect([line, refused?.code, refused?.stdout]).toEqual([line, 2, '']);
      expect([line, refused!.stderr.trim().split('\n').pop()!.startsWith(line)]).toEqual([line, true]);
    }
    expect((await app.server.services.accounts.listAccounts()).length).toBe(before);
  }, 60_000);

  describe('run away from the server\'s DATA_DIR, on a SQLite file that does not exist', () => {
    let elsewhere: string;
    let env: NodeJS.ProcessEnv;
    beforeEach(() => {
      elsewhere = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-cli-')));
      env = { ...process.env, PAYORCH_FROM_SOURCE: '' };
      delete env.DATABASE_URL;
      delete env.DATA_DIR;
      delete env.ENCRYPTION_KEY;
    });
    afterEach(() => fs.rmSync(elsewhere, { recursive: true, force: true }));

    const refusal = (dir: string) => `no database at ${path.join(dir, 'data', 'payorch.sqlite')} (nothing was created): `
      + 'run this command with the server\'s DATA_DIR or DATABASE_URL, or from the directory the server runs in';

    it('should refuse accounts list naming the path and how to point at the server\'s, exiting 2 and creating nothing', async () => {
      const failed = await run(process.execPath, [BIN, 'accounts', 'list'], { cwd: elsewhere, env }).then(
        () => null,
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect(failed?.code).toBe(2);
      expect(failed!.stdout).toBe('');
      expect(failed!.stderr).toBe(`payorch: ${refusal(elsewhere)}\n`);
      // Neither the database, nor the data directory, nor an encryption key.
      expect(fs.readdirSync(elsewhere)).toEqual([]);
    }, 60_000);

    it.each([
      [['keys', 'list', '--account', 'acct_1']],
      [['keys', 'create', '--account', 'acct_1', '--mode', 'test']],
      [['keys', 'revoke', 'key_1']],
      [['accounts', 'set-rate-limit', '--account', 'acct_1', '--rate-limit', '5']],
    ])('should refuse %j the same way: each works on what the database already holds', async (args) => {
      const saved = { DATABASE_URL: process.env.DATABASE_URL, DATA_DIR: process.env.DATA_DIR };
      delete process.env.DATABASE_URL;
      process.env.DATA_DIR = path.join(elsewhere, 'data');
      try {
        await expect(buildCli().parseAsync(['node', 'payorch', ...args])).rejects.toThrow(refusal(elsewhere));
      } finally {
        for (const [name, value] of Object.entries(saved)) if (value === undefined) delete process.env[name]; else process.env[name] = value;
      }
      expect(fs.readdirSync(elsewhere)).toEqual([]);
    });

    it('should create the database for accounts create, warning that it is new', async () => {
      const { stdout, stderr } = await run(process.execPath, [BIN, 'accounts', 'create', '--name', 'Elsewhere', '--json'], { cwd: elsewhere, env });
      expect(JSON.parse(stdout).accountId).toMatch(/^acct_/);
      expect(stderr).toBe(`payorch: database sqlite:${path.join(elsewhere, 'data', 'payorch.sqlite')} (new file: not the server's database? set DATA_DIR or DATABASE_URL)\n`);
      // Now it exists: the read-only commands read it, without the warning.
      const listed = await run(process.execPath, [BIN, 'accounts', 'list'], { cwd: elsewhere, env });
      expect(listed.stdout).toContain('Elsewhere');
      expect(listed.stderr).toBe(`payorch: database sqlite:${path.join(elsewhere, 'data', 'payorch.sqlite')}\n`);
    }, 60_000);
  });

  it('should say which migrations it applied, then that none was pending', async () => {
    const database = await freshDatabase();
    try {
      const env = { DATABASE_URL: database.url, DATA_DIR: database.dataDir };
      const first = await cli(['migrate'], env);
      const names = first.stdout.split('\n').slice(1).map((l) => l.trim()).filter(Boolean);
      expect(names.length).toBeGreaterThan(5);
      expect(names[0]).toBe('0001-foundation');
      expect(first.stdout.split('\n')[0]).toBe(`applied ${names.length} migrations (${names.length} in all):`);
      const again = await cli(['migrate'], env);
      expect(again.stdout).toBe(`no pending migrations: all ${names.length} were already applied\n`);
      expect(again.stderr).toBe(`payorch: database ${describeDatabase(database.url)}\n`);
      // A migration needs no encryption key, so none is made.
      expect(fs.existsSync(path.join(database.dataDir, 'encryption.key'))).toBe(false);
    } finally {
      await database.drop();
    }
  }, 60_000);

  it('should give every command and argument a description in --help', () => {
    const undescribed: string[] = [];
    const walk = (command: Command, trail: string) => {
      for (const sub of command.commands) {
        const name = `${trail} ${sub.name()}`.trim();
        if (!sub.description()) undescribed.push(name);
        for (const argument of sub.registeredArguments) if (!argument.description) undescribed.push(`${name} <${argument.name()}>`);
        for (const option of sub.options) if (!option.description) undescribed.push(`${name} ${option.flags}`);
        walk(sub, name);
      }
    };
    walk(buildCli(), '');
    expect(undescribed).toEqual([]);
  });

  it('should list keys create and keys revoke with what they do in keys --help', async () => {
    let stdout = '';
    const program = buildCli();
    const keys = program.commands.find((c) => c.name() === 'keys')!;
    for (const command of [program, keys]) command.exitOverride().configureOutput({ writeOut: (text) => (stdout += text) });
    await program.parseAsync(['node', 'payorch', 'keys', '--help']).catch((e: { code?: string }) => expect(e.code).toBe('commander.helpDisplayed'));
    expect(stdout).toMatch(/create \[options\]\s+create an API key/);
    expect(stdout).toMatch(/revoke <keyId>\s+revoke an API key/);
  });

  /** Parses `args` in this process, as far as commander's option checks (each refusal is before any database). */
  async function refusedOption(args: string[]): Promise<string> {
    const program = buildCli();
    const every = (command: Command): Command[] => [command, ...command.commands.flatMap(every)];
    for (const command of every(program)) command.exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    const error = await program.parseAsync(['node', 'payorch', ...args]).then(() => null, (e: Error) => e);
    expect(error).not.toBeNull();
    return error!.message;
  }

  it.each([
    ['an unknown resource', ['--permissions', 'customers:read,paymnts:write'], "option '--permissions <list>' argument 'customers:read,paymnts:write' is invalid. 'paymnts:write': unknown resource 'paymnts'; use \"*\" or"],
    ['a misspelt access', ['--permissions', 'payments:wirte'], "'payments:wirte': use 'payments:read' or 'payments:write'"],
    ['no permission', ['--permissions', ','], "option '--permissions <list>' argument ',' is invalid. list at least one permission"],
    ['a name too long', ['--name', 'x'.repeat(201)], 'must be at most 200 characters (got 201)'],
    ['a blank name', ['--name', ' '], "option '--name <name>' argument ' ' is invalid. must not be empty"],
  ])('should refuse keys create with %s naming the option and the entry', async (_case, extra, message) => {
    const refused = await refusedOption(['keys', 'create', '--account', 'acct_1', '--mode', 'test', ...extra]);
    expect(refused).toContain(message);
    expect(refused).not.toMatch(/\[\d+\]|Invalid '/);
  });

  it.each([
    [['accounts', 'set-rate-limit', '--account', 'acct_1', '--rate-limit', '0']],
    [['accounts', 'create', '--name', 'Big', '--rate-limit', '99999999999']],
    [['accounts', 'create', '--name', 'Big', '--rate-limit', '1.5']],
  ])('should refuse %j saying what --rate-limit accepts', async (args) => {
    expect(await refusedOption(args)).toMatch(/option '--rate-limit <n>' argument '[^']+' is invalid\. must be a whole number of requests per minute, from 1 to 2147483647/);
  });

  it('should name what it did not find in the user\'s terms: an API key, an account given with --account', async () => {
    const failure = (args: string[]) => cli(args).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    const revoked = await failure(['keys', 'revoke', 'key_nope']);
    expect(revoked?.code).toBe(2);
    expect(revoked!.stderr).toMatch(/^payorch: database .*\npayorch: no API key "key_nope" in this database \(`payorch keys list --account <id>` shows an account's keys\)\n$/);
    const created = await failure(['keys', 'create', '--account', 'acct_nope', '--mode', 'test']);
    expect(created?.code).toBe(2);
    expect(created!.stderr).toContain('\npayorch: --account "acct_nope": no such account in this database (`payorch accounts list` shows them)\n');
  }, 60_000);

  it('should hide the password of a PostgreSQL URL it names', () => {
    expect(describeDatabase('postgres://payorch:s3cret@db.internal:5432/payorch')).toBe('postgres://payorch:***@db.internal:5432/payorch');
    expect(describeDatabase('postgresql://postgres@127.0.0.1:5432/p')).toBe('postgresql://postgres@127.0.0.1:5432/p');
    expect(describeDatabase('sqlite:/srv/payorch/data/payorch.sqlite')).toBe('sqlite:/srv/payorch/data/payorch.sqlite');
    // pg also takes the password (and a key's passphrase) as query parameters.
    const described = describeDatabase('postgres://payorch@db.internal/payorch?sslmode=require&password=s3cret&sslpassword=k3y');
    expect(described).not.toMatch(/s3cret|k3y/);
    expect(described).toContain('sslmode=require');
  });

  it('should list accounts and an account\'s keys, hints only, each command naming its database on one stderr line', async () => {
    const named = `payorch: database ${describeDatabase(app.config.databaseUrl)}\n`;
    const listed = await cli(['accounts', 'list']);
    expect(listed.stdout).toContain(app.account.accountId);
    expect(listed.stderr).toBe(named);
    const accounts = JSON.parse((await cli(['accounts', 'list', '--json'])).stdout);
    expect(accounts).toContainEqual({ id: app.account.accountId, name: 'Test account', rateLimitPerMinute: null, createdAt: expect.any(String) });
    const keys = JSON.parse((await cli(['keys', 'list', '--account', app.account.accountId, '--json'])).stdout);
    expect(keys.map((k: { mode: string; keyHint: string }) => [k.mode, k.keyHint])).toEqual(
      expect.arrayContaining([['test', `sk_test_…${app.account.testKey.slice(-4)}`], ['live', `sk_live_…${app.account.liveKey.slice(-4)}`]]),
    );
    const { stdout: keyText, stderr } = await cli(['keys', 'list', '--account', app.account.accountId]);
    expect(stderr).toBe(named);
    expect(keyText).toContain(`sk_test_…${app.account.testKey.slice(-4)}`);
    expect(keyText).not.toContain(app.account.testKey);
    expect(JSON.stringify(keys)).not.toContain(app.account.liveKey);
    const missing = await cli(['keys', 'list', '--account', 'acct_nope']).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(missing?.code).toBe(2);
    expect(missing!.stderr).toContain('\npayorch: --account "acct_nope": no such account in this database (`payorch accounts list` shows them)\n');
  }, 150_000);

  it('should refuse to start on a busy port with one line, before opening or migrating the database', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()));
    const port = (busy.address() as net.AddressInfo).port;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-cli-'));
    try {
      const failed = await run(process.execPath, [BIN, 'start'], {
        env: { ...process.env, PAYORCH_FROM_SOURCE: '', DATA_DIR: dataDir, DATABASE_URL: '', HOST: '127.0.0.1', PORT: String(port), HTTP_PORT: '0' },
      }).then(
        () => null,
        (e: { code: number; stderr: string }) => e,
      );
      expect(failed?.code).toBe(2);
      expect(failed!.stderr).toBe(`payorch: port ${port} on 127.0.0.1 is already in use (PORT): stop what listens there or set PORT to a free port\n`);
      expect(fs.existsSync(path.join(dataDir, 'payorch.sqlite'))).toBe(false);
    } finally {
      busy.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('should stop with one clear line on bad configuration', async () => {
    const failed = await cli(['migrate'], { PORT: 'abc' }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed).not.toBeNull();
    expect(failed!.code).toBe(2);
    expect(failed!.stderr.trim().split('\n')).toHaveLength(1);
    expect(failed!.stderr).toContain('PORT');
  }, 60_000);

  // A statement waiting for SQLite's write lock sleeps on a thread of libuv's pool: four of them
  // (the default size) could leave the transaction holding the lock no thread to finish on.
  it.each([
    [undefined, '16'],
    ['8', '8'],
  ])('should run with a thread pool of 16 unless UV_THREADPOOL_SIZE says otherwise (given %s)', async (given, expected) => {
    const env: Record<string, string | undefined> = { ...process.env, PAYORCH_FROM_SOURCE: '', DATABASE_URL: app.config.databaseUrl, DATA_DIR: app.config.dataDir };
    delete env.UV_THREADPOOL_SIZE;
    if (given !== undefined) env.UV_THREADPOOL_SIZE = given;
    // Read as the process exits, after bin/payorch.js has run (a preload runs before it).
    const probe = "process.on('exit', () => process.stderr.write('pool=' + process.env.UV_THREADPOOL_SIZE + '\\n'))";
    const { stderr } = await run(process.execPath, ['--eval', `${probe}; process.argv.splice(1, 1, ${JSON.stringify(BIN)}); require(${JSON.stringify(BIN)})`, 'x', 'accounts', 'list'], { env });
    expect(stderr).toContain(`pool=${expected}\n`);
  }, 60_000);
});
