import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export const ROOT = path.join(__dirname, '..');

/** The node flags `npm start` runs the service with (its heap cap; PAYORCH_NODE_FLAGS overrides them there and here). */
export const SERVICE_NODE_FLAGS = (process.env.PAYORCH_NODE_FLAGS ?? '--max-old-space-size=384').split(/\s+/).filter(Boolean);
const PG_ADMIN = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

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
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', fd, fd] });
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

/** A fresh database for one run: a SQLite file in `dir`, or a new PostgreSQL database. */
export async function freshDatabase(dialect: string, dir: string): Promise<{ url: string; drop(): Promise<void> }> {
  if (dialect === 'sqlite') return { url: `sqlite:${path.join(dir, `bench-${randomBytes(4).toString('hex')}.sqlite`)}`, drop: async () => undefined };
  const name = `payorch_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: PG_ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(PG_ADMIN);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new Client({ connectionString: PG_ADMIN });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
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
