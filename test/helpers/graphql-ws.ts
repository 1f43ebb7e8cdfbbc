import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import type { TestApp } from './app';

/** graphql-ws clients and bare sockets against a test app's /graphql, trusting its certificate. */

export const wsUrl = (app: TestApp) => `${app.baseUrl.replace('https:', 'wss:')}/graphql`;

const socketOptions = (app: TestApp) => ({ ca: app.server.cert, servername: 'localhost' }) as WebSocket.ClientOptions;

/** A bare socket speaking graphql-ws's protocol, not yet sent anything. */
export const openSocket = (app: TestApp) => new WebSocket(wsUrl(app), 'graphql-transport-ws', socketOptions(app));

/** A graphql-ws client on one socket for all its operations (a lazy client would otherwise reconnect for each). */
export function wsClient(app: TestApp, key: string): Client {
  class TrustingWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, socketOptions(app));
    }
  }
  return createClient({
    url: wsUrl(app), webSocketImpl: TrustingWebSocket, connectionParams: { authorization: `Bearer ${key}` }, retryAttempts: 0, lazy: true, lazyCloseTimeout: 60_000,
  });
}

export interface WsResult { data?: Record<string, any> | null; errors?: Array<{ message: string; extensions: Record<string, any> }> }

/** One query or mutation over the client: its result, or the errors it was refused with. */
export function run(client: Client, query: string, variables: Record<string, unknown> = {}): Promise<WsResult> {
  return new Promise((resolve, reject) => {
    let result: WsResult = {};
    client.subscribe({ query, variables }, {
      next: (r) => { result = r as WsResult; },
      error: (e) => (Array.isArray(e) ? resolve({ errors: e as WsResult['errors'] }) : reject(e)),
      complete: () => resolve(result),
    });
  });
}

export type Outcome = 'ack' | { code: number; reason: string };

/** A bare graphql-ws connection: acknowledged, or closed with a code and reason. */
export function connect(app: TestApp, key: string | null, extraParams: Record<string, unknown> = {}): Promise<{ socket: WebSocket; outcome: Outcome }> {
  return new Promise((resolve, reject) => {
    const socket = openSocket(app);
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...extraParams } })));
    socket.on('message', (m) => {
      if (JSON.parse(String(m)).type === 'connection_ack') resolve({ socket, outcome: 'ack' });
    });
    socket.on('close', (code, reason) => resolve({ socket, outcome: { code, reason: String(reason) } }));
    socket.on('error', reject);
  });
}

export async function closed(socket: WebSocket): Promise<void> {
  if (socket.readyState === WebSocket.CLOSED) return;
  await new Promise((resolve) => {
    socket.once('close', resolve);
    socket.close();
  });
}
