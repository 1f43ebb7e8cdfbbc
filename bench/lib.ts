import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export const ROOT = path.join(__dirname, '..');
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
  if (!logFile) child.on('exit', () => fs.rmSync(file, { force: true }));
  return new Promise((resolve, reject) => {
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
