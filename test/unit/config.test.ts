import { CONFIG_VARIABLES, ConfigError, SECRET_VARIABLES, loadConfig } from '../../src/config';

function refusal(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

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

  it('should let one address hold 100 connections and a TLS handshake take 5 s, unless the listener\'s own limits are lower', () => {
    expect(loadConfig({})).toMatchObject({ maxConnectionsPerIp: 100, tlsHandshakeTimeoutMs: 5_000 });
    // Unset, they follow a lower MAX_CONNECTIONS or HEADERS_TIMEOUT_MS rather than stop the start.
    expect(loadConfig({ MAX_CONNECTIONS: '50', HEADERS_TIMEOUT_MS: '2000' })).toMatchObject({ maxConnectionsPerIp: 50, tlsHandshakeTimeoutMs: 2_000 });
    const set = loadConfig({ MAX_CONNECTIONS_PER_IP: '1000', TLS_HANDSHAKE_TIMEOUT_MS: '10000' });
    expect(set).toMatchObject({ maxConnections: 1000, maxConnectionsPerIp: 1000, tlsHandshakeTimeoutMs: 10_000 });
  });

  it('should refuse a per-address cap above MAX_CONNECTIONS and a handshake timeout above HEADERS_TIMEOUT_MS, naming both', () => {
    expect(refusal({ MAX_CONNECTIONS_PER_IP: '1001' })).toBe('Invalid configuration: MAX_CONNECTIONS_PER_IP must not be more than MAX_CONNECTIONS (got "1001", MAX_CONNECTIONS is 1000)');
    expect(refusal({ MAX_CONNECTIONS: '20', MAX_CONNECTIONS_PER_IP: '21' })).toContain('MAX_CONNECTIONS_PER_IP must not be more than MAX_CONNECTIONS');
    expect(refusal({ TLS_HANDSHAKE_TIMEOUT_MS: '10001' })).toBe('Invalid configuration: TLS_HANDSHAKE_TIMEOUT_MS must not be longer than HEADERS_TIMEOUT_MS (got "10001", HEADERS_TIMEOUT_MS is 10000)');
    expect(refusal({ HEADERS_TIMEOUT_MS: '1000', TLS_HANDSHAKE_TIMEOUT_MS: '3000' })).toContain('TLS_HANDSHAKE_TIMEOUT_MS must not be longer than HEADERS_TIMEOUT_MS');
    expect(refusal({ MAX_CONNECTIONS_PER_IP: '0' })).toBe('Invalid configuration: MAX_CONNECTIONS_PER_IP must be a whole number of connections, 1 or more (got "0")');
    expect(refusal({ TLS_HANDSHAKE_TIMEOUT_MS: 'fast' })).toBe('Invalid configuration: TLS_HANDSHAKE_TIMEOUT_MS must be a whole number of milliseconds from 100 to 3600000 (one hour) (got "fast")');
  });

  it('should send mail as Payorch <no-reply@localhost> with 30 s SMTP timeouts unless told otherwise, and take an smtp:// or smtps:// URL', () => {
    expect(loadConfig({})).toMatchObject({ mailFrom: 'Payorch <no-reply@localhost>', smtpTimeoutMs: 30_000, smtpUrl: undefined });
    const set = loadConfig({ SMTP_URL: 'smtps://u:p@mail.example.com:465', MAIL_FROM: 'billing@example.com', SMTP_TIMEOUT_MS: '5000' });
    expect(set).toMatchObject({ smtpUrl: 'smtps://u:p@mail.example.com:465', mailFrom: 'billing@example.com', smtpTimeoutMs: 5000 });
    expect(loadConfig({ MAIL_FROM: 'Acme Billing <billing@acme.example>' }).mailFrom).toBe('Acme Billing <billing@acme.example>');
    expect(refusal({ MAIL_FROM: 'Acme <billing@acme.example>\r\nBcc: x@evil.example' })).toContain('MAIL_FROM must be an e-mail address');
  });

  it('should tell whether MAIL_FROM was given (the start warns about the placeholder sender over SMTP)', () => {
    expect(loadConfig({}).mailFromSet).toBe(false);
    expect(loadConfig({ MAIL_FROM: 'billing@example.com' }).mailFromSet).toBe(true);
  });

  it("should take the default account's name from ACCOUNT_NAME, trimmed, 1 to 200 characters", () => {
    expect(loadConfig({}).accountName).toBeUndefined();
    expect(loadConfig({ ACCOUNT_NAME: '  Müller & Söhne GmbH ' }).accountName).toBe('Müller & Söhne GmbH');
    expect(refusal({ ACCOUNT_NAME: '   ' })).toBe('Invalid configuration: ACCOUNT_NAME must be a name of 1 to 200 characters, such as Acme Ltd (got "   ")');
    expect(refusal({ ACCOUNT_NAME: 'x'.repeat(201) })).toContain('ACCOUNT_NAME must be a name of 1 to 200 characters');
  });

  it('should time Redis calls out after 50 ms unless REDIS_TIMEOUT_MS says otherwise (10 to 10000)', () => {
    expect(loadConfig({}).redisTimeoutMs).toBe(50);
    expect(loadConfig({ REDIS_TIMEOUT_MS: '250' }).redisTimeoutMs).toBe(250);
    expect(refusal({ REDIS_TIMEOUT_MS: '20000' })).toBe('Invalid configuration: REDIS_TIMEOUT_MS must be a whole number of milliseconds from 10 to 10000 (got "20000")');
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
    [{ MAX_CONNECTIONS_PER_IP: '2.5' }, 'MAX_CONNECTIONS_PER_IP'],
    [{ MAX_CONNECTIONS: '10', MAX_CONNECTIONS_PER_IP: '11' }, 'MAX_CONNECTIONS_PER_IP must not be more than MAX_CONNECTIONS'],
    [{ TLS_HANDSHAKE_TIMEOUT_MS: '50' }, 'TLS_HANDSHAKE_TIMEOUT_MS'],
    [{ TLS_HANDSHAKE_TIMEOUT_MS: '20000' }, 'TLS_HANDSHAKE_TIMEOUT_MS must not be longer than HEADERS_TIMEOUT_MS'],
    [{ HEADERS_TIMEOUT_MS: 'soon' }, 'HEADERS_TIMEOUT_MS'],
    [{ REQUEST_TIMEOUT_MS: '50' }, 'REQUEST_TIMEOUT_MS'],
    [{ KEEP_ALIVE_TIMEOUT_MS: '1.5' }, 'KEEP_ALIVE_TIMEOUT_MS'],
    [{ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' }, 'HEADERS_TIMEOUT_MS must not be longer than REQUEST_TIMEOUT_MS'],
    [{ TRUST_PROXY: 'true' }, 'TRUST_PROXY=true needs PUBLIC_URL'],
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
  /** A value each variable refuses, or null for free text (a path, a host, an address) that nothing refuses. */
  const REFUSED: Record<string, string | null> = {
    DATABASE_URL: 'mysql://payorch:s3cret-db@db/payorch',
    DATABASE_REPLICA_URLS: 'mysql://payorch:s3cret-db@replica/payorch',
    REPLICA_READ_AFTER_WRITE_MS: '-1',
    REPLICA_MAX_LAG_MS: '50',
    DATA_DIR: null,
    HOST: null,
    PORT: 'eighty',
    HTTP_PORT: '70000',
    PUBLIC_URL: 'pay.example.com',
    TLS_CERT_FILE: null,
    TLS_KEY_FILE: null,
    REDIS_URL: 'localhost:6379?password=s3cret-redis',
    REDIS_TIMEOUT_MS: '5',
    SMTP_URL: 'mail.example.com:25?password=s3cret-smtp',
    MAIL_FROM: 'billing at example.com',
    SMTP_TIMEOUT_MS: '50',
    ACCOUNT_NAME: 'Acme\nBcc: x@evil.example',
    BILLING_CRON: 'every minute',
    BILLING_LEASE_MS: '10',
    PAYMENT_LEASE_MS: '500',
    ENCRYPTION_KEY: 's3cret-key-too-short',
    TRUST_PROXY: 'maybe',
    WEBHOOK_ALLOW_PRIVATE: 'on',
    WEBHOOK_CA_FILE: null,
    IDEMPOTENCY_TTL_HOURS: '0',
    LOG_LEVEL: 'verbose',
    RUN_WORKERS: 'sometimes',
    RATE_LIMIT_PER_MINUTE: '0',
    GRAPHQL_WS_KEY_RECHECK_MS: '10',
    API_KEY_CACHE_MS: '120000',
    GATEWAY_ALLOW_PRIVATE_BASE_URL: 'perhaps',
    GRAPHQL_WS_MAX_SUBSCRIPTIONS: '0',
    GRAPHQL_WS_MAX_SOCKETS_PER_KEY: 'many',
    GRAPHQL_WS_MAX_SUBSCRIPTIONS_PER_ACCOUNT: '0',
    GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: '-3',
    WEBHOOK_TIMEOUT_MS: '0',
    WEBHOOK_LEASE_MS: 'long',
    WEBHOOK_RETRY_BASE_MS: '-5',
    WEBHOOK_RETRY_MAX_MS: 'never',
    WEBHOOK_RETRY_WINDOW_MS: '0',
    WEBHOOK_GONE_WINDOW_MS: 'soon',
    WEBHOOK_POLL_MS: '-1',
    WEBHOOK_CONCURRENCY: '2.5',
    WEBHOOK_ENDPOINT_CONCURRENCY: '0',
    MAX_CONNECTIONS: '0',
    MAX_CONNECTIONS_PER_IP: '-1',
    HEADERS_TIMEOUT_MS: '50',
    TLS_HANDSHAKE_TIMEOUT_MS: '99',
    REQUEST_TIMEOUT_MS: 'soon',
    KEEP_ALIVE_TIMEOUT_MS: '4000000',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://collector:4317',
    OTEL_SERVICE_NAME: 'pay\norch',
    OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'pg,mysql',
    METRICS_PORT: '65536',
    METRICS_HOST: null,
    METRICS_TOKEN: 's3cret-short',
  };

  it('should have a refused value (or a reason for none) for every variable it reads', () => {
    expect(Object.keys(REFUSED).sort()).toEqual([...CONFIG_VARIABLES].sort());
  });

  it.each(Object.entries(REFUSED).filter(([, value]) => value !== null))(
    'should refuse %s=%j in the operator\'s words, with no validator wording and no secret echoed',
    (name, value) => {
      const message = refusal({ [name]: value as string });
      expect(message).toMatch(new RegExp(`^Invalid configuration: ${name} must `));
      expect(message).not.toMatch(/Invalid (option|input)|expected|Too (small|big)|[<>]=?\s?\d|received|NaN|"fatal"\|/i);
      if (SECRET_VARIABLES.includes(name as never)) expect(message).not.toMatch(/s3cret|got/);
      else expect(message).toContain(`(got ${JSON.stringify(value)})`);
    },
  );

  it('should trace only when an OTLP endpoint is set, to the traces endpoint or the base one\'s /v1/traces', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_SERVICE_NAME: 'payorch-eu' }).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing)
      .toEqual({ endpoint: 'http://collector:4318/v1/traces', serviceName: 'payorch', disabledInstrumentations: [] });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com/otlp/', OTEL_SERVICE_NAME: 'payorch-eu' }).tracing)
      .toEqual({ endpoint: 'https://otel.example.com/otlp/v1/traces', serviceName: 'payorch-eu', disabledInstrumentations: [] });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_NODE_DISABLED_INSTRUMENTATIONS: ' pg, koa ' }).tracing?.disabledInstrumentations)
      .toEqual(['pg', 'koa']);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/v1/traces' }).tracing?.endpoint)
      .toBe('http://traces:4318/v1/traces');
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' })).toBe(
      'Invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http(s) URL of an OTLP/HTTP collector, such as http://localhost:4318 (got "localhost:4318")',
    );
    expect(refusal({ OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'pg,mysql' })).toBe(
      'Invalid configuration: OTEL_NODE_DISABLED_INSTRUMENTATIONS must be a comma-separated list of instrumentations to leave out, among http, koa, pg, graphql (got "pg,mysql")',
    );
  });

  it('should say what LOG_LEVEL and RATE_LIMIT_PER_MINUTE accept', () => {
    expect(refusal({ LOG_LEVEL: 'verbose' })).toBe('Invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "verbose")');
    expect(refusal({ RATE_LIMIT_PER_MINUTE: '0' })).toBe('Invalid configuration: RATE_LIMIT_PER_MINUTE must be a whole number of requests per minute, 1 or more (got "0")');
    expect(refusal({ RATE_LIMIT_PER_MINUTE: '2.5' })).toContain('RATE_LIMIT_PER_MINUTE must be a whole number');
  });

  it('should keep a refused value on one line and cut a long one', () => {
    const message = refusal({ LOG_LEVEL: `warn\n${'x'.repeat(500)}` });
    expect(message).not.toContain('\n');
    expect(message.length).toBeLessThan(200);
  });

  it('should never quote a secret variable back, whatever it holds', () => {
    expect(SECRET_VARIABLES).toEqual(expect.arrayContaining(['DATABASE_URL', 'DATABASE_REPLICA_URLS', 'ENCRYPTION_KEY', 'REDIS_URL', 'SMTP_URL']));
  });

  it('should read no replica by default, and the replicas, read-after-write window and lag limit when given', () => {
    expect(loadConfig({})).toMatchObject({ databaseReplicaUrls: [], replicaReadAfterWriteMs: 2000, replicaMaxLagMs: 5000 });
    const c = loadConfig({
      DATABASE_URL: 'postgres://payorch@db1/payorch',
      DATABASE_REPLICA_URLS: ' postgres://payorch:pw@db2:5433/payorch, postgresql://payorch@db3/payorch ',
      REPLICA_READ_AFTER_WRITE_MS: '0',
      REPLICA_MAX_LAG_MS: '1500',
    });
    expect(c).toMatchObject({
      databaseReplicaUrls: ['postgres://payorch:pw@db2:5433/payorch', 'postgresql://payorch@db3/payorch'], replicaReadAfterWriteMs: 0, replicaMaxLagMs: 1500,
    });
  });

  it('should refuse replicas beside a SQLite database, and a list with anything but postgres:// URLs, quoting no URL', () => {
    const sqlite = 'Invalid configuration: DATABASE_REPLICA_URLS needs a PostgreSQL DATABASE_URL (read replicas are streaming standbys of a PostgreSQL primary; the database is SQLite)';
    expect(refusal({ DATABASE_REPLICA_URLS: 'postgres://payorch@db2/payorch' })).toBe(sqlite);
    expect(refusal({ DATABASE_URL: 'sqlite:/tmp/x.sqlite', DATABASE_REPLICA_URLS: 'postgres://payorch@db2/payorch' })).toBe(sqlite);
    const mixed = refusal({ DATABASE_URL: 'postgres://payorch@db1/payorch', DATABASE_REPLICA_URLS: 'postgres://payorch:s3cret@db2/payorch,db3:5432' });
    expect(mixed).toBe('Invalid configuration: DATABASE_REPLICA_URLS must be one or more postgres:// URLs, separated by commas');
  });

  it('should read true and false in any case', () => {
    expect(loadConfig({ TRUST_PROXY: 'TRUE', PUBLIC_URL: 'https://pay.example.com', RUN_WORKERS: 'No' })).toMatchObject({ trustProxy: true, runWorkers: false });
  });
});
