import { ConfigError, loadConfig } from '../../src/config';

describe('configuration', () => {
  it('should default to SQLite in ./data with ports 8443 and 8080', () => {
    const c = loadConfig({});
    expect(c.databaseUrl).toMatch(/^sqlite:.*data[\\/]payorch\.sqlite$/);
    expect(c.port).toBe(8443);
    expect(c.httpPort).toBe(8080);
    expect(c.idempotencyTtlHours).toBe(24);
    expect(c.runWorkers).toBe(true);
    expect(c.apiKeyCacheMs).toBe(1000);
  });

  it('should default to a 1,000-connection cap and 10 s / 30 s / 5 s header, request and keep-alive timeouts', () => {
    const c = loadConfig({});
    expect([c.maxConnections, c.headersTimeoutMs, c.requestTimeoutMs, c.keepAliveTimeoutMs]).toEqual([1000, 10_000, 30_000, 5_000]);
    const set = loadConfig({ MAX_CONNECTIONS: '50', HEADERS_TIMEOUT_MS: '2000', REQUEST_TIMEOUT_MS: '2000', KEEP_ALIVE_TIMEOUT_MS: '100' });
    expect([set.maxConnections, set.headersTimeoutMs, set.requestTimeoutMs, set.keepAliveTimeoutMs]).toEqual([50, 2000, 2000, 100]);
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
    [{ ENCRYPTION_KEY: 'short' }, 'ENCRYPTION_KEY'],
    [{ REDIS_URL: 'localhost:6379' }, 'REDIS_URL'],
    [{ PUBLIC_URL: 'not a url' }, 'PUBLIC_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ TLS_CERT_FILE: '/x.pem' }, 'TLS_CERT_FILE'],
    [{ API_KEY_CACHE_MS: '-1' }, 'API_KEY_CACHE_MS'],
    [{ API_KEY_CACHE_MS: '120000' }, 'API_KEY_CACHE_MS'],
    [{ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS'],
    [{ HEADERS_TIMEOUT_MS: 'soon' }, 'HEADERS_TIMEOUT_MS'],
    [{ REQUEST_TIMEOUT_MS: '50' }, 'REQUEST_TIMEOUT_MS'],
    [{ KEEP_ALIVE_TIMEOUT_MS: '1.5' }, 'KEEP_ALIVE_TIMEOUT_MS'],
    [{ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' }, 'HEADERS_TIMEOUT_MS must not be longer than REQUEST_TIMEOUT_MS'],
  ])('should refuse %j with one line naming %s', (env, name) => {
    let error: unknown;
    try {
      loadConfig(env as NodeJS.ProcessEnv);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(name);
    expect(message).not.toContain('\n');
  });
});
