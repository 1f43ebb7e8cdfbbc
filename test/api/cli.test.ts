import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, type TestApp } from '../helpers/app';

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
  run(process.execPath, [BIN, ...args], { env: { ...process.env, DATABASE_URL: app.config.databaseUrl, DATA_DIR: app.config.dataDir, ...env } });

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
    expect(key.key).toMatch(/^sk_live_/);
    expect((await app.request('GET', '/v1/customers', { key: key.key })).status).toBe(200);
    expect((await app.request('POST', '/v1/customers', { key: key.key, body: { email: 'cli@example.com' } })).status).toBe(403);
    // Just used, so the server holds the key as verified; the CLI is another process.
    expect((await app.request('GET', '/v1/customers', { key: key.key })).status).toBe(200);
    await cli(['keys', 'revoke', key.id]);
    await new Promise((r) => setTimeout(r, 350));
    const refused = await app.request('GET', '/v1/customers', { key: key.key });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_api_key');
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
