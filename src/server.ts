import http from 'node:http';
import https from 'node:https';
import { isIPv4, type AddressInfo, type Socket } from 'node:net';
import type { Config } from './config';
import { createServices, type ServiceOptions, type Services } from './services';
import { loadTls, tlsServerOptions } from './tls';
import type { Logger } from './logger';
import { createHttpApp } from './http/app';
import { restTransport } from '../rest/app';
import { plainHttpRedirect } from '../rest/plain-http-redirect';
import { startWorkers, type Workers } from '../workers';
import { mountGraphQL, type GraphQLMount } from '../schema/server';
import { metricsListener } from './http/metrics';

export interface RunningServer {
  services: Services;
  httpsServer: https.Server;
  httpServer: http.Server;
  baseUrl: string;
  httpUrl: string;
  /** The METRICS_PORT listener (`http://host:port/metrics`), when configured. */
  metricsUrl?: string;
  cert: string;
  stop(): Promise<void>;
}

/**
 * Slow or idle clients cannot hold a connection: the TLS handshake must finish within
 * TLS_HANDSHAKE_TIMEOUT_MS and the headers arrive within HEADERS_TIMEOUT_MS, the whole request
 * within REQUEST_TIMEOUT_MS, an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS,
 * and each listener holds at most MAX_CONNECTIONS sockets (GraphQL subscriptions included), at
 * most MAX_CONNECTIONS_PER_IP of them from one address; one over either is closed at once.
 */
function connectionLimits(config: Config) {
  return {
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // Node checks the header and request timeouts on this beat (30 s by default, which let a
    // slow client stay that much longer than the timeout).
    connectionsCheckingInterval: Math.min(1_000, Math.max(50, Math.floor(config.headersTimeoutMs / 4))),
  };
}

/** Counts refusals and logs them at most once a minute with the count: a flood must not flood the log. */
function refusalLog(logger: Logger, fields: Record<string, unknown>, message: string): (address?: string) => void {
  let refused = 0;
  let warnedAt = 0;
  return (address) => {
    refused += 1;
    const now = Date.now(); // not business time: log throttling only
    if (now - warnedAt < 60_000) return;
    logger.warn({ ...fields, refused, ...(address === undefined ? {} : { address }) }, message);
    warnedAt = now;
    refused = 0;
  };
}

/** A socket's peer address, IPv4-mapped IPv6 (a dual-stack listener's ::ffff:10.0.0.1) as IPv4. */
function peerAddress(socket: Socket): string | undefined {
  const address = socket.remoteAddress?.toLowerCase();
  return address?.startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address;
}

function capConnections(server: http.Server | https.Server, config: Config, logger: Logger, listener: string): void {
  // Node closes a socket beyond maxConnections before emitting 'connection'.
  server.maxConnections = config.maxConnections;
  const dropped = refusalLog(logger, { listener, maxConnections: config.maxConnections }, 'connection refused: too many open connections');
  server.on('drop', () => dropped());

  // Per client address, counted on the TCP socket as it is accepted. The address is the TCP
  // peer's: TRUST_PROXY does not apply here (there is no request yet to carry X-Forwarded-For),
  // so behind a proxy every connection counts against the proxy's address, and the operator
  // raises MAX_CONNECTIONS_PER_IP there. The server's own 'connection' listener (TLS's on the
  // HTTPS listener, HTTP's on the plain one) is taken off and called from here for a socket let
  // in only, so one refused is destroyed before any TLS work (no TLS socket is made for it).
  const perAddress = refusalLog(logger, { listener, maxConnectionsPerIp: config.maxConnectionsPerIp }, 'connection refused: too many open connections from one address');
  const open = new Map<string, number>();
  const accept = server.listeners('connection') as ((this: typeof server, socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', function admit(this: typeof server, socket: Socket) {
    const address = peerAddress(socket);
    // No address: the peer is already gone (reset before we got here).
    if (address === undefined) return void socket.destroy();
    const count = open.get(address) ?? 0;
    if (count >= config.maxConnectionsPerIp) {
      socket.destroy();
      return perAddress(address);
    }
    open.set(address, count + 1);
    // 'close' comes once per socket, however it ends (TLS error or timeout, keep-alive timeout,
    // shutdown, the client): the TCP socket under a TLS one is closed with it.
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
    for (const handle of accept) handle.call(this, socket);
  });
}

function listen(server: http.Server | https.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: http.Server | https.Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

export interface StartOptions extends ServiceOptions {
  runWorkers?: boolean;
}

/**
 * Once at start: mail going to a real SMTP server from the placeholder sender (no MAIL_FROM)
 * carries `no-reply@localhost`, which receiving servers distrust and customers cannot answer.
 * The .eml files written without SMTP_URL go nowhere, so they need no warning.
 */
function warnAboutSender(config: Config, logger: Logger): void {
  if (!config.smtpUrl || config.mailFromSet) return;
  logger.warn(
    { mailFrom: config.mailFrom },
    `MAIL_FROM is not set: mail goes to the SMTP server from ${config.mailFrom}; set MAIL_FROM to an address of your own domain, such as Acme Billing <billing@acme.example>`,
  );
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const services = await createServices(config, options);
  warnAboutSender(config, services.logger);
  const tls = await loadTls({ certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, dataDir: config.dataDir });
  const limits = connectionLimits(config);
  const httpsServer = https.createServer({ ...tlsServerOptions(tls), ...limits, handshakeTimeout: config.tlsHandshakeTimeoutMs });
  capConnections(httpsServer, config, services.logger, 'https');
  let graphql: GraphQLMount | undefined;
  const app = createHttpApp(services, [
    // GraphQL first: /graphql is outside the REST namespace, whose last step answers 404.
    { mount: (koa, shared) => { graphql = mountGraphQL(koa, services, httpsServer, shared); } },
    restTransport(services),
  ]);
  await graphql?.start();
  // Koa snapshots its middleware in callback(): take it only after everything is mounted.
  const handle = app.callback();
  // Nothing waits for a request's promise: Koa catches every failure in it (ctx.onerror answers
  // the request), so it never rejects.
  httpsServer.on('request', (req, res) => void handle(req, res));
  const httpsPort = await listen(httpsServer, config.port, config.host);
  services.urls.listeningOn(httpsPort);
  const httpServer = http.createServer(
    limits,
    plainHttpRedirect({ publicUrl: config.publicUrl, bindHost: config.host, cert: tls.cert, httpsPort: () => httpsPort }),
  );
  capConnections(httpServer, config, services.logger, 'http');
  const httpPort = await listen(httpServer, config.httpPort, config.host);
  let metricsServer: http.Server | undefined;
  let metricsUrl: string | undefined;
  if (config.metricsPort !== undefined) {
    metricsServer = http.createServer(limits, metricsListener(services.metrics, config.metricsToken, services.logger));
    capConnections(metricsServer, config, services.logger, 'metrics');
    const port = await listen(metricsServer, config.metricsPort, config.metricsHost);
    metricsUrl = `http://${config.metricsHost.includes(':') ? `[${config.metricsHost}]` : config.metricsHost}:${port}/metrics`;
  }
  const workers: Workers | undefined = (options.runWorkers ?? config.runWorkers) ? startWorkers(services) : undefined;
  const displayHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  let stopping: Promise<void> | undefined;
  return {
    services,
    httpsServer,
    httpServer,
    cert: tls.cert,
    baseUrl: `https://${displayHost}:${httpsPort}`,
    httpUrl: `http://${displayHost}:${httpPort}`,
    metricsUrl,
    stop() {
      // Stop accepting, let in-flight requests finish, stop workers, then close the pool.
      stopping ??= (async () => {
        await Promise.all([closeServer(httpsServer), closeServer(httpServer), metricsServer && closeServer(metricsServer), graphql?.stop()]);
        await workers?.stop();
        await services.close();
      })();
      return stopping;
    },
  };
}
