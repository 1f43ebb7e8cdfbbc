import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, type TestApp } from '../helpers/app';
import { describeDatabase } from '../../src/cli';
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
  run(process.execPath, [BIN, ...args], { env: { ...process.env, PAYORCH_FROM_SOURCE: '1', DATABASE_URL: app.config.databaseUrl, DATA_DIR: app.config.dataDir, ...env } });

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
    await new Promise((r) => setTimeout(r, 350));
    const refused = await app.request('GET', '/v1/customers', { key: key.secret });
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
  }, 60_000);

  it('should say when the database is a new SQLite file, as when run away from the server\'s DATA_DIR', async () => {
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-cli-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, PAYORCH_FROM_SOURCE: '1' };
      delete env.DATABASE_URL;
      delete env.DATA_DIR;
      const { stderr } = await run(process.execPath, [BIN, 'accounts', 'list'], { cwd: elsewhere, env });
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).toContain(`sqlite:${path.join(fs.realpathSync(elsewhere), 'data', 'payorch.sqlite')}`);
      expect(stderr).toMatch(/new file.*DATA_DIR or DATABASE_URL/);
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
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
  }, 150_000);

  it('should refuse to start on a busy port with one line, before opening or migrating the database', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()));
    const port = (busy.address() as net.AddressInfo).port;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-cli-'));
    try {
      const failed = await run(process.execPath, [BIN, 'start'], {
        env: { ...process.env, PAYORCH_FROM_SOURCE: '1', DATA_DIR: dataDir, DATABASE_URL: '', HOST: '127.0.0.1', PORT: String(port), HTTP_PORT: '0' },
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
});
