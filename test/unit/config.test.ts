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
