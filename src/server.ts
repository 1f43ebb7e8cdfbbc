import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Config } from './config';
import { createServices, type ServiceOptions, type Services } from './services';
import { loadTls, tlsServerOptions } from './tls';
import type { Logger } from './logger';
import { createHttpApp } from './http/app';
import { restTransport } from '../rest/app';
import { plainHttpRedirect } from '../rest/plain-http-redirect';
import { startWorkers, type Workers } from '../workers';
import { mountGraphQL, type GraphQLMount } from '../schema/server';

export interface RunningServer {
  services: Services;
  httpsServer: https.Server;
  httpServer: http.Server;
  baseUrl: string;
  httpUrl: string;
  cert: string;
  stop(): Promise<void>;
}

/**
 * Slow or idle clients cannot hold a connection: the TLS handshake must finish within
 * TLS_HANDSHAKE_TIMEOUT_MS and the headers arrive within HEADERS_TIMEOUT_MS, the whole request
 * within REQUEST_TIMEOUT_MS, an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS,
 * and each listener holds at most MAX_CONNECTIONS sockets (GraphQL subscriptions included); one
 * over that is closed at once.
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

function capConnections(server: http.Server | https.Server, config: Config, logger: Logger, listener: string): void {
  server.maxConnections = config.maxConnections;
  // One warning per minute at most with the count refused meanwhile: a flood must not flood the log.
  let refused = 0;
  let warnedAt = 0;
  server.on('drop', () => {
    refused += 1;
    const now = Date.now(); // not business time: log throttling only
    if (now - warnedAt < 60_000) return;
    logger.warn({ listener, maxConnections: config.maxConnections, refused }, 'connection refused: too many open connections');
    warnedAt = now;
    refused = 0;
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

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const services = await createServices(config, options);
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
  httpsServer.on('request', app.callback());
  const httpsPort = await listen(httpsServer, config.port, config.host);
  services.urls.listeningOn(httpsPort);
  const httpServer = http.createServer(
    limits,
    plainHttpRedirect({ publicUrl: config.publicUrl, bindHost: config.host, cert: tls.cert, httpsPort: () => httpsPort }),
  );
  capConnections(httpServer, config, services.logger, 'http');
  const httpPort = await listen(httpServer, config.httpPort, config.host);
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
    stop() {
      // Stop accepting, let in-flight requests finish, stop workers, then close the pool.
      stopping ??= (async () => {
        await Promise.all([closeServer(httpsServer), closeServer(httpServer), graphql?.stop()]);
        await workers?.stop();
        await services.close();
      })();
      return stopping;
    },
  };
}
