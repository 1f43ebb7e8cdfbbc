import type { IncomingMessage } from 'node:http';
import { CloseCode, makeServer, type ServerOptions } from 'graphql-ws';
import WebSocket, { type WebSocketServer } from 'ws';
import { errorForLog, type Logger } from '../src/logger';

/** What every graphql-ws hook finds in `ctx.extra`, as graphql-ws's own `useServer` gives it. */
export interface WsExtra {
  socket: WebSocket;
  request: IncomingMessage;
}

export interface WsTransport {
  /** Closes every open socket with 1001 (the server is going away). */
  dispose(): void;
}

/**
 * graphql-ws served over `ws`, as graphql-ws's reference `useServer` (graphql-ws/use/ws) does:
 * the same protocol server (makeServer), the same keep-alive, except that whatever goes wrong is
 * logged as one JSON line through pino. useServer writes with console.error: a hook that threw,
 * a frame over `maxPayload`, an error on the server.
 */
export function serveGraphQLWs<P extends Record<string, unknown>, E extends WsExtra>(
  wss: WebSocketServer, options: ServerOptions<P, E>, logger: Logger, keepAliveMs = 12_000,
): WsTransport {
  const server = makeServer<P, E>(options);
  // The HTTPS server's errors are re-emitted here; unheard, an 'error' event would throw.
  wss.on('error', (err) => logger.error({ err: errorForLog(err) }, 'graphql-ws server error'));
  wss.on('connection', (socket, request) => {
    socket.on('error', (err: Error & { code?: string }) => {
      // Mostly the client's frames (too large, malformed): ws has already closed with the
      // matching code (1009, 1002, …). Anything else ends the socket too.
      logger.warn({ wsError: err.code, err: { name: err.name, message: err.message }, remoteAddress: request.socket.remoteAddress }, 'graphql-ws socket error; socket closed');
      if (socket.readyState === WebSocket.OPEN) socket.close(CloseCode.InternalServerError, 'Internal server error');
    });
    // A peer that stops answering pings is dropped, as useServer does.
    let pongWait: NodeJS.Timeout | null = null;
    const ping = setInterval(() => {
      if (socket.readyState !== WebSocket.OPEN) return;
      pongWait = setTimeout(() => socket.terminate(), keepAliveMs);
      socket.once('pong', () => {
        if (pongWait) clearTimeout(pongWait);
        pongWait = null;
      });
      socket.ping();
    }, keepAliveMs);
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) => new Promise<void>((resolve, reject) => {
          if (socket.readyState !== WebSocket.OPEN) return resolve();
          socket.send(data, (err) => (err ? reject(err) : resolve()));
        }),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) => {
          const receive = async (data: WebSocket.RawData) => {
            try {
              await handle(String(data));
            } catch (err) {
              logger.error({ err: errorForLog(err) }, 'graphql-ws message failed; socket closed');
              if (socket.readyState === WebSocket.OPEN) socket.close(CloseCode.InternalServerError, 'Internal server error');
            }
          };
          // The emitter does not wait for a message: receive catches and logs its own failures.
          socket.on('message', (data) => void receive(data));
        },
      },
      { socket, request } as E,
    );
    socket.once('close', (code, reason) => {
      if (pongWait) clearTimeout(pongWait);
      clearInterval(ping);
      closed(code, String(reason)).catch((err: unknown) => logger.error({ err: errorForLog(err) }, 'graphql-ws close failed'));
    });
  });
  return {
    dispose() {
      for (const client of wss.clients) client.close(1001, 'Going away');
    },
  };
}
