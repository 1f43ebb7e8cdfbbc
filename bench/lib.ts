import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export const ROOT = path.join(__dirname, '..');
const PG_ADMIN = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Starts a process and resolves once its output matches `ready`; output is drained, not kept. */
export function startProcess(args: string[], env: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let started = false;
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer) => {
      if (started) return;
      output += String(c);
      const m = ready.exec(output);
      if (m) {
        started = true;
        resolve({ child, match: m });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => {
      if (!started) reject(new Error(`exited ${code}: ${output}`));
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
