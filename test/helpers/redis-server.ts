import net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from './wait';
import { freePort } from './ports';

/**
 * A throwaway redis-server of the test's own, on a free port, with nothing persisted, that the
 * test may kill, freeze and start again on the same port (an outage) without touching the shared
 * server at 6379.
 */
export interface RedisServer {
  url: string;
  port: number;
  /** Starts it again on the same port (after kill) and waits until it answers PING. */
  start(): Promise<void>;
  /** SIGKILL: connections drop at once and every key is gone, as in a crash. */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT: connections stay open but nothing is answered (a hung server). */
  freeze(): void;
  thaw(): void;
  /** Kills it if it runs (afterAll). */
  destroy(): Promise<void>;
}

/** Whether a server on `port` answers PING within a second. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.on('error', () => finish(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += String(chunk);
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const server: RedisServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      const started = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'], {
        stdio: 'ignore',
      });
      child = started;
      exited = new Promise((resolve) => started.once('exit', () => resolve()));
      await waitFor(() => answersPing(port), { timeoutMs: 10_000, intervalMs: 20, what: `redis-server to answer on port ${port}` });
    },
    async kill() {
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      child = undefined;
    },
    freeze() {
      child?.kill('SIGSTOP');
    },
    thaw() {
      child?.kill('SIGCONT');
    },
    async destroy() {
      child?.kill('SIGCONT');
      await server.kill();
    },
  };
  await server.start();
  return server;
}
