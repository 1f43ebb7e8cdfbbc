import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { httpsRequest, type HttpResponse, type RequestOptions } from './http';
import type { TestApp } from './app';

export interface SpawnedInstance {
  baseUrl: string;
  output: string[];
  child: ChildProcess;
  request(method: string, p: string, opts?: RequestOptions): Promise<HttpResponse>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export const ROOT = path.join(__dirname, '..', '..');

export interface SpawnOptions {
  /** The program and its arguments; `node bin/payorch.js start` unless given. */
  command?: string;
  args?: string[];
  /** How long the instance may take to say it listens (60 s unless given). */
  startTimeoutMs?: number;
}

/**
 * A second service instance in its own process (the real multi-instance situation). It runs
 * dist/, as `npm start` does: the global set-up (test/setup/global-setup.js) compiled it from the
 * sources as they are, and bin/payorch.js checks its stamp against them again, so a test never
 * runs a stale build. (Through ts-node, every spawn compiled the sources again: about 8 CPU-s.)
 */
export function spawnInstance(env: Record<string, string>, ca: string, opts: SpawnOptions = {}): Promise<SpawnedInstance> {
  const child = spawn(opts.command ?? process.execPath, opts.args ?? [path.join(ROOT, 'bin', 'payorch.js'), 'start'], {
    cwd: ROOT,
    env: { ...process.env, PAYORCH_FROM_SOURCE: '', HOST: '127.0.0.1', PORT: '0', HTTP_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  let exited: Promise<number | null>;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`instance did not start:\n${output.join('')}`)), opts.startTimeoutMs ?? 60_000);
    exited = new Promise((res) => child.on('exit', (code) => res(code)));
    child.stderr!.on('data', (c) => output.push(String(c)));
    child.stdout!.on('data', (c) => {
      const text = String(c);
      output.push(text);
      const m = /"url":"(https:\/\/[^"]+)".*"msg":"payorch listening"/.exec(text);
      if (m) {
        clearTimeout(timer);
        const baseUrl = m[1].replace('localhost', '127.0.0.1');
        resolve({
          baseUrl,
          output,
          child,
          request: (method, p, opts) => httpsRequest(baseUrl, ca, method, p, opts),
          stop: async (signal = 'SIGTERM') => {
            if (child.exitCode === null) child.kill(signal);
            return exited;
          },
        });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`instance exited with ${code}:\n${output.join('')}`));
    });
  });
}

/**
 * Another instance on a test app's database and data directory (so its encryption key and
 * certificate too), API only (no workers) and with a rate limit out of the way: the second
 * instance of a multi-instance test. `env` adds to or overrides those settings.
 */
export function spawnBeside(app: TestApp, env: Record<string, string> = {}): Promise<SpawnedInstance> {
  return spawnInstance(
    { DATABASE_URL: app.config.databaseUrl, DATA_DIR: app.config.dataDir, RUN_WORKERS: 'false', RATE_LIMIT_PER_MINUTE: '100000', ...env },
    app.server.cert,
  );
}
