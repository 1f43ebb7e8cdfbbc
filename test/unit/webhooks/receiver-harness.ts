import fs from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { generate } from 'selfsigned';
import { createReceiver, verifySignature } from '../../../examples/webhook-receiver';
import { waitFor as waitUntil } from '../../helpers/wait';

/**
 * Test receivers for webhook deliveries over real HTTPS: one server, one route per endpoint.
 * A route answers with the example receiver (examples/webhook-receiver.js: signature check,
 * 200) unless its `respond` says otherwise for that request.
 */

export interface ReceivedRequest {
  /** 1-based count of requests on the route. */
  n: number;
  eventId: string;
  attempt: number;
  signature: string;
  /** X-Service-Signature-Next ('' when absent). */
  signatureNext: string;
  body: string;
  at: number;
}

export interface VerifiedEvent {
  event: { id: string; type: string; data: { object: Record<string, unknown> }; [k: string]: unknown };
  eventId: string;
  attempt: number;
  duplicate: boolean;
}

/**
 * What a route does with its nth request: pass it to the example receiver, answer a status, or
 * hold it (for `holdMs`, or until the test settles `until`: a receiver that answers when told).
 */
export type Respond = (
  n: number,
  req: IncomingMessage,
) => 'pass' | number | { status: number; headers?: Record<string, string> } | { holdMs: number; then?: number } | { until: Promise<unknown>; then?: number };

export interface Route {
  name: string;
  url: string;
  requests: ReceivedRequest[];
  /** Deliveries the example receiver accepted (valid signature). */
  verified: VerifiedEvent[];
  setSecret(secret: string | string[]): void;
  respond?: Respond;
}

export interface Certificate {
  cert: string;
  key: string;
  caFile: string;
}

export async function makeCertificate(): Promise<Certificate> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
  } as never);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-webhook-ca-'));
  const caFile = path.join(dir, 'receiver-ca.pem');
  fs.writeFileSync(caFile, pems.cert);
  return { cert: pems.cert, key: pems.private, caFile };
}

export class ReceiverHarness {
  private server?: https.Server;
  private readonly routes = new Map<string, Route & { listener: (req: IncomingMessage, res: ServerResponse) => void }>();
  private readonly held = new Set<NodeJS.Timeout>();
  base = '';

  constructor(readonly tls: Certificate) {}

  async start(port = 0): Promise<void> {
    this.server = https.createServer({ cert: this.tls.cert, key: this.tls.key }, (req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.base = `https://localhost:${(this.server.address() as AddressInfo).port}`;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  route(name: string, secret: string | string[] = [], respond?: Respond): Route {
    const route = {
      name,
      url: `${this.base}/hooks/${name}`,
      requests: [] as ReceivedRequest[],
      verified: [] as VerifiedEvent[],
      respond,
      listener: (() => undefined) as (req: IncomingMessage, res: ServerResponse) => void,
      setSecret: (s: string | string[]) => {
        const receiver = createReceiver({
          secret: s,
          cert: this.tls.cert,
          key: this.tls.key,
          onEvent: (event, info) => route.verified.push({ event, ...info }),
        });
        route.listener = receiver.listeners('request')[0] as typeof route.listener;
      },
    };
    route.setSecret(secret);
    this.routes.set(name, route);
    return route;
  }

  /** Every signature on the route verifies with `secret` (and none with the others). */
  static signedWith(req: ReceivedRequest, secret: string): boolean {
    return verifySignature(secret, req.body, req.signature);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const m = /^\/hooks\/([^/?]+)/.exec(req.url ?? '');
    const route = m ? this.routes.get(m[1]) : undefined;
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    const n = route.requests.length + 1;
    const record: ReceivedRequest = {
      n,
      eventId: String(req.headers['x-service-event-id'] ?? ''),
      attempt: Number(req.headers['x-service-delivery-attempt'] ?? 0),
      signature: String(req.headers['x-service-signature'] ?? ''),
      signatureNext: String(req.headers['x-service-signature-next'] ?? ''),
      body: '',
      at: Date.now(),
    };
    route.requests.push(record);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      record.body = Buffer.concat(chunks).toString('utf8');
    });
    const action = route.respond ? route.respond(n, req) : 'pass';
    if (action === 'pass') {
      route.listener(req, res);
      return;
    }
    req.on('end', () => {
      if (typeof action === 'number' || 'status' in action) {
        const status = typeof action === 'number' ? action : action.status;
        const headers = typeof action === 'number' ? {} : (action.headers ?? {});
        res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end('receiver says no');
        return;
      }
      if ('until' in action) {
        void action.until.then(() => {
          if (!res.destroyed) res.writeHead(action.then ?? 200).end();
        });
        return;
      }
      const timer = setTimeout(() => {
        this.held.delete(timer);
        if (!res.destroyed) res.writeHead(action.then ?? 200).end();
      }, action.holdMs);
      this.held.add(timer);
    });
  }

  async stop(): Promise<void> {
    for (const t of this.held) clearTimeout(t);
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
  }
}

/** Polls `check` until it returns a truthy value (or throws after `timeoutMs`): test/helpers/wait's waitFor, in this file's older signature. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  return waitUntil(check, { timeoutMs, what, intervalMs: 25 });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
