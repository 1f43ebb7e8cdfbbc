/**
 * What bench/checkout-pay and bench/invoice-pdf share: the service started as
 * bench/create-payment starts it, a small keep-alive JSON client for the set-up requests made
 * before anything is measured, and percentiles of a list of latencies.
 */
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { ROOT, SERVICE_NODE_FLAGS, servicePorts, startProcess } from './lib';

export interface Service {
  child: ChildProcess;
  pid: number;
  /** `https://127.0.0.1:<port>` */
  baseUrl: string;
  /** The test key printed on first start. */
  testKey: string;
  /** What it printed until it listened (its start-up log lines). */
  startupOutput: string;
}

/**
 * `payorch start` on `databaseUrl`, workers off, default log level, with the node flags `npm start`
 * uses, on the ports `servicePorts` gives (BENCH_PORT). The rate limit is raised out of the way:
 * it applies per account and mode and, on the public routes (no key), per client IP, and both
 * take RATE_LIMIT_PER_MINUTE as their default.
 */
export async function startService(databaseUrl: string, dataDir: string, env: Record<string, string> = {}, nodeFlags: string[] = []): Promise<Service> {
  const { child, match } = await startProcess(
    [...SERVICE_NODE_FLAGS, ...nodeFlags, path.join(ROOT, 'bin', 'payorch.js'), 'start'],
    { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, ...servicePorts(), HOST: '127.0.0.1', RUN_WORKERS: 'false', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '100000000', ...env },
    /test key: (sk_test_\S+)[\s\S]*listening on https:\/\/[^:]+:(\d+)/,
  );
  return { child, pid: child.pid as number, baseUrl: `https://127.0.0.1:${match[2]}`, testKey: match[1], startupOutput: match.input };
}

/** Stops the service and waits for it to exit. */
export async function stopService(service: Service): Promise<void> {
  if (service.child.exitCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
}

// The set-up client talks to the local self-signed listener only.
const agent = new https.Agent({ keepAlive: true, maxSockets: 32, rejectUnauthorized: false });

/** One JSON request over the keep-alive agent: its status and parsed envelope (or raw text). */
export function api(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; json: { data?: Record<string, unknown>; error?: unknown } }> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(url, {
      method,
      agent,
      headers: { ...(text === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }), ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let json: { data?: Record<string, unknown>; error?: unknown };
        try {
          json = JSON.parse(raw);
        } catch {
          json = { error: raw.slice(0, 200) };
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** Runs `fn` over `items`, `concurrency` at a time. */
export async function inParallel<T, R>(items: T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }));
  return out;
}

/** The p-th percentile (nearest rank) of `xs`. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * CPU time a process has used so far, all its threads, in seconds (utime + stime of
 * /proc/<pid>/stat, in clock ticks of 10 ms); null without procfs.
 */
export function cpuSeconds(pid: number): number | null {
  try {
    // The command name (field 2) may hold spaces: count fields from the closing parenthesis.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

export const mb = (n: number | null | undefined): string => (n == null ? '?' : `${n.toFixed(0)} MB`);
export const loadAverage = (): string => os.loadavg().map((n) => n.toFixed(2)).join(' ');
export const machine = (): string => `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}`;
