import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export const ROOT = path.join(__dirname, '..');

/** The node flags `npm start` runs the service with (its heap cap; PAYORCH_NODE_FLAGS overrides them there and here). */
export const SERVICE_NODE_FLAGS = (process.env.PAYORCH_NODE_FLAGS ?? '--max-old-space-size=384').split(/\s+/).filter(Boolean);

// ---- What keeps a run apart from other work on the machine (bench/README.md, "Environment").
// Every benchmark takes its ports, database names and Redis from here.

/** The PostgreSQL server's maintenance database: every benchmark database is created and dropped through it. */
export const PG_ADMIN = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * BENCH_DB_PREFIX starts the name of every database a benchmark makes: PostgreSQL databases and
 * SQLite files. The name goes into CREATE DATABASE unquoted, so it must be a plain lower-case
 * identifier, short enough to leave room for the rest of the name (PostgreSQL keeps 63 bytes).
 */
export const DB_PREFIX = ((): string => {
  const prefix = process.env.BENCH_DB_PREFIX || 'payorch_bench';
  if (!/^[a-z_][a-z0-9_]{0,31}$/.test(prefix)) {
    throw new Error(`BENCH_DB_PREFIX must be lower-case letters, digits and _, starting with a letter or _, at most 32 characters (got ${JSON.stringify(prefix)})`);
  }
  return prefix;
})();

/** A new database name: the prefix, what it is for (if anything), and a random suffix, so runs at once never share one. */
export function databaseName(purpose?: string): string {
  return `${DB_PREFIX}${purpose ? `_${purpose}` : ''}_${randomBytes(4).toString('hex')}`;
}

/**
 * BENCH_PORT: the first port of the listeners a benchmark starts (services, baselines,
 * receivers), the next ones taking BENCH_PORT + 1, + 2, … in the order they start. Unset or 0:
 * each listener takes a port the system picks, which the benchmark reads back.
 */
const BASE_PORT = ((): number => {
  const raw = process.env.BENCH_PORT || '0';
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error(`BENCH_PORT must be a port number, 0 to 65535 (got ${JSON.stringify(raw)})`);
  return port;
})();
let portsTaken = 0;

/** The port for the next listener this process starts (0: the system picks). */
export function benchPort(): number {
  if (BASE_PORT === 0) return 0;
  const port = BASE_PORT + portsTaken++;
  if (port > 65535) throw new Error(`BENCH_PORT=${BASE_PORT} leaves no port for listener ${portsTaken}`);
  return port;
}

/** PORT and HTTP_PORT for a `payorch start` (its HTTPS listener and its plain-HTTP redirect). */
export function servicePorts(): { PORT: string; HTTP_PORT: string } {
  return { PORT: String(benchPort()), HTTP_PORT: String(benchPort()) };
}

/**
 * The Redis every process a benchmark starts is given: BENCH_REDIS_URL, else none. A REDIS_URL
 * in the caller's environment is not passed on: the service's Redis fan-out channel and
 * rate-limit keys have fixed names, so a benchmark on it would share them with whatever else
 * uses that Redis (and would measure the Redis fan-out instead of PostgreSQL's NOTIFY).
 */
const REDIS_URL = process.env.BENCH_REDIS_URL ?? '';

/** A fresh directory for one run's files (SQLite databases, the service's DATA_DIR, logs), under TMPDIR. */
export function benchTempDir(purpose: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `payorch-bench-${purpose}-`));
}

/**
 * Starts a process and resolves once its output matches `ready`. The output goes to a file (kept
 * in `logFile` when given, else removed at exit), not to a pipe: the benchmark's load generator
 * runs in this process and must not spend its event loop reading the service's access log.
 */
export function startProcess(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  logFile?: string,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const file = logFile ?? path.join(os.tmpdir(), `payorch-bench-${randomBytes(6).toString('hex')}.log`);
  const fd = fs.openSync(file, 'w');
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, REDIS_URL, ...env }, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  const started = new Promise<{ child: ChildProcess; match: RegExpExecArray }>((resolve, reject) => {
    let settled = false;
    const check = () => {
      if (settled) return;
      // Start-up output is small; the file is read only until the ready line shows, and only
      // whole lines are matched (a line being written could end a port number early).
      const text = fs.readFileSync(file, 'utf8');
      const m = ready.exec(text.slice(0, text.lastIndexOf('\n') + 1));
      if (m) {
        settled = true;
        clearInterval(timer);
        resolve({ child, match: m });
      }
    };
    const timer = setInterval(check, 50);
    child.on('exit', (code) => {
      check();
      if (settled) return;
      settled = true;
      clearInterval(timer);
      reject(new Error(`exited ${code}: ${fs.readFileSync(file, 'utf8')}`));
    });
  });
  // Removed only after the listener above has read it: a process that stops during start-up
  // (a port in use, a bad setting) is reported with its output.
  if (!logFile) child.on('exit', () => fs.rmSync(file, { force: true }));
  return started;
}

/** The URL of database `name` on the PostgreSQL server PG_ADMIN_URL names. */
export function pgUrl(name: string): string {
  const u = new URL(PG_ADMIN);
  u.pathname = `/${name}`;
  return u.toString();
}

/** One statement on the maintenance database (CREATE DATABASE and DROP DATABASE run outside a transaction). */
export async function adminQuery(sql: string): Promise<void> {
  const c = new Client({ connectionString: PG_ADMIN });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Creates PostgreSQL database `name`, empty or as a copy of `template`. */
export async function createDatabase(name: string, template?: string): Promise<void> {
  await adminQuery(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
}

/** Drops PostgreSQL database `name`, closing its connections first. */
export async function dropDatabase(name: string): Promise<void> {
  await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/** A fresh database for one run: a SQLite file in `dir`, or a new PostgreSQL database. */
export async function freshDatabase(dialect: string, dir: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = databaseName();
  if (dialect === 'sqlite') return { url: `sqlite:${path.join(dir, `${name}.sqlite`)}`, drop: async () => undefined };
  await createDatabase(name);
  return { url: pgUrl(name), drop: () => dropDatabase(name) };
}

/** A process's resident set in MB, from /proc/<pid>/status (VmRSS), else `ps`; null once it is gone. */
export function rssMb(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (m) return Number(m[1]) / 1024;
  } catch {
    // no procfs (macOS): ask ps
  }
  const ps = spawnSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' });
  const kb = Number.parseInt(ps.stdout ?? '', 10);
  return Number.isFinite(kb) ? kb / 1024 : null;
}

export interface RssSamples {
  /** Highest reading while sampling, MB. */
  peak: number;
  /** The last reading, MB. */
  end: number;
  /** One reading every `traceMs`, MB: shows whether it levels off or keeps growing. */
  trace: number[];
}

/**
 * Reads a process's RSS every `everyMs` until `stop()`. The readings are cheap (one small file),
 * taken in the load generator's process, so they cost the measured service nothing.
 */
export function sampleRss(pid: number, everyMs = 100, traceMs = 5000): { stop(): RssSamples } {
  const started = Date.now();
  const out: RssSamples = { peak: 0, end: 0, trace: [] };
  const read = () => {
    const mb = rssMb(pid);
    if (mb === null) return;
    out.peak = Math.max(out.peak, mb);
    out.end = mb;
    if (Date.now() - started >= out.trace.length * traceMs) out.trace.push(mb);
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    stop() {
      clearInterval(timer);
      read();
      return out;
    },
  };
}
