import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Database } from '../../src/db/database';
import { MODELS } from '../../src/db/models';
import { spawnInstance } from '../helpers/spawn';

/** Permission bits of a file or directory, as `ls -l` would show them in octal. */
const mode = (p: string) => (fs.statSync(p).mode & 0o777).toString(8);

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-perm-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

describe('files the service keeps on disk', () => {
  it('should start on a fresh DATA_DIR without the wrong-directory warning, keeping the directory 0700 and its files 0600', async () => {
    const dataDir = path.join(root, 'data');
    // SQLite in DATA_DIR and a generated key and certificate, whatever the test run's environment says.
    const payorch = await spawnInstance({ DATA_DIR: dataDir, DATABASE_URL: '', ENCRYPTION_KEY: '', TLS_CERT_FILE: '', TLS_KEY_FILE: '', RUN_WORKERS: 'false' }, '');
    try {
      const output = payorch.output.join('');
      expect(output).toContain(`payorch: database sqlite:${path.join(dataDir, 'payorch.sqlite')} (new file)\n`);
      expect(output).not.toContain('not the server\'s database');
      expect(output).toContain('Created the default account');
      // While it runs, with the database in WAL mode: the -wal and -shm files are there too.
      const modes = Object.fromEntries(
        ['.', 'payorch.sqlite', 'payorch.sqlite-wal', 'payorch.sqlite-shm', 'encryption.key', 'tls', 'tls/key.pem'].map((f) => [f, mode(path.join(dataDir, f))]),
      );
      expect(modes).toEqual({
        '.': '700', 'payorch.sqlite': '600', 'payorch.sqlite-wal': '600', 'payorch.sqlite-shm': '600', 'encryption.key': '600', tls: '700', 'tls/key.pem': '600',
      });
    } finally {
      await payorch.stop();
    }
  }, 120_000);

  it('should create a SQLite database 0600 (and its -wal and -shm files) in a new 0700 directory', async () => {
    const file = path.join(root, 'nested', 'dir', 'payorch.sqlite');
    const db = new Database({ url: `sqlite:${file}`, models: MODELS });
    try {
      await db.init();
      await db.execute('CREATE TABLE t (x INTEGER)');
      await db.execute('INSERT INTO t VALUES (1)');
      expect([mode(path.join(root, 'nested')), mode(path.dirname(file))]).toEqual(['700', '700']);
      expect([file, `${file}-wal`, `${file}-shm`].map(mode)).toEqual(['600', '600', '600']);
      expect(db.tightenedFiles).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it('should make database files an earlier version left open to others 0600, leaving an existing directory as it is', async () => {
    fs.chmodSync(root, 0o755);
    const file = path.join(root, 'payorch.sqlite');
    const first = new Database({ url: `sqlite:${file}`, models: MODELS });
    await first.init();
    await first.execute('CREATE TABLE t (x INTEGER)');
    await first.close();
    fs.chmodSync(file, 0o644);
    fs.writeFileSync(`${file}-journal`, '', { mode: 0o644 });
    fs.chmodSync(`${file}-journal`, 0o644);

    const again = new Database({ url: `sqlite:${file}`, models: MODELS });
    try {
      await again.init();
      expect(again.tightenedFiles).toEqual([file, `${file}-journal`]);
      expect(mode(file)).toBe('600');
      expect(mode(root)).toBe('755');
      expect((await again.select<{ n: number }>('SELECT COUNT(*) AS n FROM t'))[0].n).toBe(0);
    } finally {
      await again.close();
    }
  });
});
