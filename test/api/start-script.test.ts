import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { freshDatabase, type TestDatabase } from '../helpers/db';
import { httpsRequest } from '../helpers/http';
import { ROOT, spawnInstance, type SpawnedInstance } from '../helpers/spawn';

interface BuildScript {
  sourcesDigest(root?: string): string;
  isBuilt(root?: string, dist?: string): boolean;
  build(opts?: { outDir?: string }): void;
  INPUTS: string[];
}
const buildScript = require('../../scripts/build') as BuildScript;

/** Live (not zombie) processes whose parent chain reaches `ancestor`. */
function descendants(ancestor: number): number[] {
  const parent = new Map<number, number>();
  const alive = new Set<number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(entry), Number(ppid));
      if (state !== 'Z') alive.add(Number(entry));
    } catch {
      // exited while listing
    }
  }
  return [...alive].filter((pid) => {
    for (let p = parent.get(pid); p; p = parent.get(p)) if (p === ancestor) return true;
    return false;
  });
}

function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

async function within(ms: number, check: () => Promise<boolean> | boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('npm start', () => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await freshDatabase();
  });
  afterEach(() => database.drop());

  it('should stop the server when the npm start process gets SIGTERM', async () => {
    const instance: SpawnedInstance = await spawnInstance({ DATABASE_URL: database.url, DATA_DIR: database.dataDir }, '', { command: 'npm', args: ['start'] });
    const npmPid = instance.child.pid!;
    const node = fs.realpathSync(process.execPath);
    // The Node.js process running the service, below npm and (without exec) its shell.
    const servers = descendants(npmPid).filter(
      (pid) => fs.readlinkSync(`/proc/${pid}/exe`) === node && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('payorch.js'),
    );
    try {
      expect(servers).toHaveLength(1);
      const httpsPort = Number(new URL(instance.baseUrl).port);
      const httpPort = Number(/"redirect":"http:\/\/[^:]+:(\d+)"/.exec(instance.output.join(''))![1]);
      expect(await refused(httpsPort)).toBe(false);

      process.kill(npmPid, 'SIGTERM');
      expect(await within(5_000, async () => (await refused(httpsPort)) && (await refused(httpPort)))).toBe(true);
      expect(await within(5_000, () => !isAlive(servers[0]))).toBe(true);
      // The log line may reach us through npm's pipe a little after the process is gone.
      expect(await within(5_000, () => instance.output.join('').includes('shutting down'))).toBe(true);
    } finally {
      for (const pid of [npmPid, ...servers]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 90_000);
});

describe('compiled build (what npm start runs)', () => {
  const outDir = path.join(ROOT, `.dist-test-${randomBytes(4).toString('hex')}`);
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
    buildScript.build({ outDir });
  }, 240_000);
  afterAll(async () => {
    fs.rmSync(outDir, { recursive: true, force: true });
    await database?.drop();
  });

  it('should be stamped as built from the current sources', () => {
    expect(buildScript.isBuilt(ROOT, outDir)).toBe(true);
  });

  it('should migrate an empty database, serve a payment and stop on SIGTERM, without ts-node', async () => {
    // --require is refused for ts-node: the compiled service must not need it.
    const guard = path.join(outDir, 'no-ts-node.js');
    fs.writeFileSync(
      guard,
      "const M = require('node:module'); const load = M._load;\n" +
        "M._load = function (request, ...rest) { if (/^ts-node(\\/|$)|^typescript$/.test(request)) throw new Error('loaded ' + request); return load.call(this, request, ...rest); };\n",
    );
    const instance = await spawnInstance({ DATABASE_URL: database.url, DATA_DIR: database.dataDir }, '', {
      args: ['--require', guard, path.join(outDir, 'src', 'cli.js'), 'start'],
    });
    try {
      const ca = fs.readFileSync(path.join(database.dataDir, 'tls', 'cert.pem'), 'utf8');
      const key = /test key: (sk_test_\S+)/.exec(instance.output.join(''))![1];
      const res = await httpsRequest(instance.baseUrl, ca, 'POST', '/v1/payments', {
        key,
        headers: { 'idempotency-key': randomUUID() },
        body: { amount: 1999, currency: 'usd', paymentMethod: 'pm_card_visa' },
      });
      expect(res.status).toBe(201);
      expect(res.body.data.status).toBe('succeeded');
      expect(await instance.stop('SIGTERM')).toBe(0);
    } finally {
      await instance.stop('SIGKILL');
    }
  }, 90_000);
});

describe('build staleness', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-build-'));
    for (const input of buildScript.INPUTS) {
      if (input.endsWith('.json')) fs.writeFileSync(path.join(root, input), '{}');
      else fs.mkdirSync(path.join(root, input, 'sub'), { recursive: true });
    }
    fs.writeFileSync(path.join(root, 'src', 'a.ts'), 'export const a = 1;\n');
    fs.writeFileSync(path.join(root, 'src', 'sub', 'b.ts'), 'export const b = 2;\n');
    fs.mkdirSync(path.join(root, 'dist'));
    fs.writeFileSync(path.join(root, 'dist', '.sources-sha256'), `${buildScript.sourcesDigest(root)}\n`);
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('should count dist/ as built only from the sources as they are now', () => {
    expect(buildScript.isBuilt(root)).toBe(true);
    fs.writeFileSync(path.join(root, 'src', 'sub', 'b.ts'), 'export const b = 3;\n');
    expect(buildScript.isBuilt(root)).toBe(false);
    fs.writeFileSync(path.join(root, 'src', 'sub', 'b.ts'), 'export const b = 2;\n');
    expect(buildScript.isBuilt(root)).toBe(true);
    fs.writeFileSync(path.join(root, 'workers', 'c.ts'), '');
    expect(buildScript.isBuilt(root)).toBe(false);
    fs.rmSync(path.join(root, 'workers', 'c.ts'));
    expect(buildScript.isBuilt(root)).toBe(true);
    fs.renameSync(path.join(root, 'src', 'a.ts'), path.join(root, 'src', 'sub', 'a.ts'));
    expect(buildScript.isBuilt(root)).toBe(false);
    fs.rmSync(path.join(root, 'src', 'sub', 'a.ts'));
    expect(buildScript.isBuilt(root)).toBe(false);
  });

  it('should not count a dist/ without a stamp as built', () => {
    fs.rmSync(path.join(root, 'dist', '.sources-sha256'));
    expect(buildScript.isBuilt(root)).toBe(false);
  });
});
