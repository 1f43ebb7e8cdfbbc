import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Config } from './config';
import { createServices, type ServiceOptions, type Services } from './services';
import { loadTls } from './tls';
import { createApp } from '../rest/app';
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

function hostOnly(hostHeader: string | undefined): string {
  const m = /^(\[[^\]]+\]|[^:]+)/.exec(hostHeader ?? '');
  return m ? m[1] : 'localhost';
}

/** Plain HTTP only ever answers 301 to the same path and query over HTTPS. */
function redirectHandler(config: Config, httpsPort: () => number) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const requestId = `req_${randomBytes(12).toString('hex')}`;
    const port = httpsPort();
    const base = config.publicUrl ?? `https://${hostOnly(req.headers.host)}${port === 443 ? '' : `:${port}`}`;
    const body = JSON.stringify({
      data: null,
      error: { code: 'https_required', message: 'HTTPS is required; use the https:// address', requestId },
    });
    res.writeHead(301, {
      Location: `${base}${req.url ?? '/'}`,
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'X-Request-Id': requestId,
    });
    res.end(body);
  };
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
  const httpsServer = https.createServer({ cert: tls.cert, key: tls.key });
  let graphql: GraphQLMount | undefined;
  const app = createApp(services, [
    (koa, _services, shared) => {
      graphql = mountGraphQL(koa, services, httpsServer, shared);
    },
  ]);
  await graphql?.start();
  // Koa snapshots its middleware in callback(): take it only after everything is mounted.
  httpsServer.on('request', app.callback());
  const httpsPort = await listen(httpsServer, config.port, config.host);
  const httpServer = http.createServer(redirectHandler(config, () => httpsPort));
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
