import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { freePort } from './ports';

const run = promisify(execFile);

/**
 * A throwaway PostgreSQL cluster of the test's own, on a free port, that the test may stop and
 * start (an outage, a restart) without touching the shared server at 5432.
 */
export interface PgCluster {
  /** A database URL for the cluster's `postgres` database (trust auth, user postgres). */
  url: string;
  port: number;
  start(): Promise<void>;
  /** `immediate`: the server drops every connection at once, as a crash or a failover would. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops the cluster (if running) and removes its files. */
  destroy(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb'))) : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL server binaries under ${root}`);
  versions.sort((a, b) => Number(b) - Number(a));
  return path.join(root, versions[0], 'bin');
}

/** initdb and pg_ctl refuse to run as root: as root they run as the `postgres` OS user. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

async function serverCommand(command: string, args: string[]): Promise<void> {
  const [file, argv] = asServerUser(command, args);
  await run(file, argv, { timeout: 60_000 });
}

/** A directory of the cluster's own, owned by the server's OS user when we run as root. */
async function clusterDir(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-pg-'));
  if (process.getuid?.() === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const uid = Number(stdout.trim());
    const { stdout: gidText } = await run('id', ['-g', 'postgres']);
    fs.chownSync(dir, uid, Number(gidText.trim()));
  }
  return dir;
}

/** The cluster in `dir/data` served on `port` (not started yet). */
function clusterOn(bin: string, dir: string, port: number, settings: string[]): PgCluster {
  const dataDir = path.join(dir, 'data');
  // Small and quick: the socket lives in the cluster's own directory, nothing is fsynced.
  const serverOptions = [`-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40 -c shared_buffers=16MB`, ...settings.map((s) => `-c ${s}`)].join(' ');
  let running = false;
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await serverCommand(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-o', serverOptions, '-l', path.join(dir, 'server.log'), '-w', 'start']);
      running = true;
    },
    async stop(mode = 'fast') {
      await serverCommand(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-m', mode, '-w', 'stop']);
      running = false;
    },
    async destroy() {
      if (running) await cluster.stop('immediate').catch(() => undefined);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

async function started(cluster: PgCluster, dir: string): Promise<PgCluster> {
  try {
    await cluster.start();
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return cluster;
}

/**
 * Creates and starts a cluster; the caller destroys it. `settings` are more `name=value` server
 * settings (`shared_preload_libraries=pg_stat_statements`). Its WAL is fit for streaming
 * standbys (startPgStandby): `wal_level=replica`, and initdb's pg_hba.conf lets local
 * replication connections in with trust.
 */
export async function startPgCluster(options: { settings?: string[] } = {}): Promise<PgCluster> {
  const bin = binDir();
  const dir = await clusterDir();
  await serverCommand(path.join(bin, 'initdb'), ['-D', path.join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const port = await freePort();
  return started(clusterOn(bin, dir, port, ['wal_level=replica', 'max_wal_senders=5', ...(options.settings ?? [])]), dir);
}

/** Why a streaming standby cannot be made here (no pg_basebackup beside initdb), or null when it can. */
export function standbyUnavailable(): string | null {
  try {
    return fs.existsSync(path.join(binDir(), 'pg_basebackup')) ? null : `pg_basebackup is not in ${binDir()}`;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * A streaming standby of `primary` on a port of its own: a base backup taken with
 * `pg_basebackup -R` (which writes the primary's address into the copy and marks it a standby)
 * and a second `postgres` process serving it, read-only, replaying the primary's WAL as it comes.
 * Resolves once it accepts connections; the caller destroys it (before the primary).
 */
export async function startPgStandby(primary: PgCluster, options: { settings?: string[] } = {}): Promise<PgCluster> {
  const bin = binDir();
  const dir = await clusterDir();
  await serverCommand(path.join(bin, 'pg_basebackup'), ['-D', path.join(dir, 'data'), '-d', primary.url, '-R', '-X', 'stream', '--no-sync']);
  const port = await freePort();
  return started(clusterOn(bin, dir, port, options.settings ?? []), dir);
}
