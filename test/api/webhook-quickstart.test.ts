import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config';
import { freshDatabase, type TestDatabase } from '../helpers/db';
import { httpsRequest } from '../helpers/http';
import { ROOT, spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import { freePort } from '../helpers/ports';

const run = promisify(execFile);
const SCRIPT = path.join(ROOT, 'examples', 'webhook-quickstart.sh');

/** The commands of the guide's "Try it on your machine" block, comments and blank lines left out. */
function documentedCommands(): string[] {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'webhooks.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Try it on your machine'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1];
  return block.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
}

/** Output of a child until `pattern` shows up (or it exits, or time runs out). */
function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const take = (chunk: Buffer) => {
      output += String(chunk);
      if (pattern.test(output)) {
        clearTimeout(timer);
        resolve(output);
      }
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}:\n${output}`));
    });
  });
}

describe('the webhook guide, as written', () => {
  let dir: string;
  let database: TestDatabase;
  let payorch: SpawnedInstance | undefined;
  let quickstart: ChildProcess | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-quickstart-'));
    database = await freshDatabase();
  });

  afterAll(async () => {
    // The script and the receiver it started share a process group.
    if (quickstart?.pid && quickstart.exitCode === null) process.kill(-quickstart.pid, 'SIGTERM');
    await payorch?.stop();
    await database.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('should deliver a verified event to the example receiver following the documented commands', async () => {
    // Exactly these commands, in this order; a change to the guide must come with one here.
    expect(documentedCommands()).toEqual([
      'sh examples/webhook-quickstart.sh cert',
      'WEBHOOK_ALLOW_PRIVATE=true WEBHOOK_CA_FILE=webhook-quickstart/cert.pem npm start',
      'export PAYORCH_KEY=sk_test_...',
      'sh examples/webhook-quickstart.sh run',
    ]);

    // 1. The receiver's certificate, in the directory the commands are run from.
    const cert = await run('sh', [SCRIPT, 'cert'], { cwd: dir });
    expect(cert.stdout).toContain('WEBHOOK_ALLOW_PRIVATE=true WEBHOOK_CA_FILE=webhook-quickstart/cert.pem npm start');

    // 2. Payorch with the documented variables and otherwise its defaults, but for a free port
    // (tests run side by side) and the test database; the data dir is the default ./data.
    const startLine = documentedCommands()[1];
    const documentedEnv = Object.fromEntries(
      startLine.split(' ').filter((word) => word.includes('=')).map((word) => word.split('=') as [string, string]),
    );
    payorch = await spawnInstance(
      {
        ...documentedEnv,
        WEBHOOK_CA_FILE: path.join(dir, documentedEnv.WEBHOOK_CA_FILE),
        DATABASE_URL: database.url,
        DATA_DIR: path.join(dir, 'data'),
        RUN_WORKERS: 'true',
        RATE_LIMIT_PER_MINUTE: '100000',
      },
      '',
    );
    const testKey = /test key: (sk_test_\S+)/.exec(payorch.output.join(''))![1];
    const port = new URL(payorch.baseUrl).port;

    // 3. The key Payorch printed at its first start, and the script's run step: twice, as a user
    // trying it again would, on the same receiver port. Each run delivers.
    const receiverPort = String(await freePort());
    const ca = fs.readFileSync(path.join(dir, 'data', 'tls', 'cert.pem'), 'utf8');
    const emails: string[] = [];
    for (const round of [1, 2]) {
      quickstart = spawn('sh', [SCRIPT, 'run'], {
        cwd: dir,
        detached: true,
        env: { ...process.env, PAYORCH_KEY: testKey, PAYORCH_URL: `https://localhost:${port}`, RECEIVER_PORT: receiverPort },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // The receiver prints the verified event's line, then its object: wait for both.
      const output = await waitForOutput(quickstart, /received customer\.created evt_\w+ \(attempt 1, livemode false\)[\s\S]*"email": "[^"]+@example\.com"/, 90_000);
      // curl's --fail-with-body reports a refusal as "returned error: 409"; a bare /409/ also
      // matched a receiver port or timestamp that happened to contain those digits.
      expect(output).not.toMatch(/duplicate_email|returned error: 409/);
      emails.push(/"email": "([^"]+)"/.exec(output)![1]);
      const endpointId = /registered endpoint (we_\w+)/.exec(output)![1];

      // 4. Stopped (as Ctrl-C stops it), the script deletes its endpoint: a later run leaves none behind.
      const ended = new Promise((resolve) => quickstart!.on('exit', resolve));
      process.kill(-quickstart.pid!, 'SIGINT');
      await ended;
      const gone = await httpsRequest(payorch.baseUrl, ca, 'GET', `/v1/webhook-endpoints/${endpointId}`, { key: testKey });
      expect([round, gone.status]).toEqual([round, 404]);
    }
    // A new customer each run: the second is not refused as a duplicate e-mail.
    expect(new Set(emails).size).toBe(2);
  }, 300_000);

  it('should keep its key directory out of git, private to the user', async () => {
    const script = fs.readFileSync(SCRIPT, 'utf8');
    const keyDir = /DIR=\$\{QUICKSTART_DIR:-([^}]+)\}/.exec(script)![1];
    const ignored = fs.readFileSync(path.join(ROOT, '.gitignore'), 'utf8').split('\n').map((l) => l.trim());
    expect(ignored).toContain(`/${keyDir}/`);
    // The key is the user's alone.
    const own = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-quickstart-cert-'));
    try {
      await run('sh', [SCRIPT, 'cert'], { cwd: own });
      expect((fs.statSync(path.join(own, keyDir)).mode & 0o777).toString(8)).toBe('700');
      expect((fs.statSync(path.join(own, keyDir, 'key.pem')).mode & 0o777).toString(8)).toBe('600');
    } finally {
      fs.rmSync(own, { recursive: true, force: true });
    }
  });

  it("should default to Payorch's own address and a receiver port Payorch does not use", () => {
    const script = fs.readFileSync(SCRIPT, 'utf8');
    const defaults = loadConfig({});
    expect(/PAYORCH_URL=\$\{PAYORCH_URL:-https:\/\/localhost:(\d+)\}/.exec(script)![1]).toBe(String(defaults.port));
    const receiverPort = Number(/RECEIVER_PORT=\$\{RECEIVER_PORT:-(\d+)\}/.exec(script)![1]);
    expect([defaults.port, defaults.httpPort]).not.toContain(receiverPort);
  });
});
