import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../helpers/app';
import { ROOT } from '../helpers/spawn';
import { waitFor, watchStreams } from '../helpers/wait';

const EXAMPLE = path.join(ROOT, 'examples', 'graphql-subscribe.js');

let app: TestApp;
let checkout: string;
beforeAll(async () => {
  app = await startTestApp();
  // What the example reads: the generated certificate at data/tls/cert.pem of the directory it runs in.
  checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-ws-example-'));
  fs.mkdirSync(path.join(checkout, 'data', 'tls'), { recursive: true });
  fs.writeFileSync(path.join(checkout, 'data', 'tls', 'cert.pem'), app.server.cert);
});
afterAll(async () => {
  await app.stop();
  fs.rmSync(checkout, { recursive: true, force: true });
});

function runExample(key: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const wsUrl = `${app.baseUrl.replace('https:', 'wss:')}/graphql`;
  const child = spawn(process.execPath, [EXAMPLE], { cwd: checkout, env: { ...process.env, KEY: key, PAYORCH_WS_URL: wsUrl }, stdio: 'pipe' });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += String(c)));
  child.stderr!.on('data', (c: Buffer) => (output += String(c)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('the README graphql-ws client', () => {
  it('should be in the README exactly as examples/graphql-subscribe.js holds it', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks).toContain(fs.readFileSync(EXAMPLE, 'utf8'));
  });

  it('should connect with the generated certificate and print events as they commit', async () => {
    const streams = watchStreams(app.server.services.bus);
    const run = runExample(app.account.testKey);
    try {
      // Until its subscription is open a customer's event passes it by.
      await waitFor(() => streams.opened() >= 1 || run.child.exitCode !== null, { timeoutMs: 20_000, what: "the example's subscription to open" });
      const res = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'ws-example@example.com' } });
      expect(res.status).toBe(201);
      const line = await waitFor(() => run.output().split('\n').find((l) => l.includes('customer.created')), { what: 'the example to print the event' }).catch((err: Error) => {
        throw new Error(`${err.message}; it printed: ${run.output()}`);
      });
      expect(JSON.parse(line)).toEqual({ id: expect.stringMatching(/^evt_/), type: 'customer.created', createdAt: expect.any(String) });
    } finally {
      streams.stop();
      run.child.kill();
      await run.exited;
    }
  });

  it('should say why and exit non-zero when the key is refused', async () => {
    const run = runExample('sk_test_' + 'x'.repeat(43));
    expect(await run.exited).toBe(1);
    expect(run.output()).toMatch(/^subscription ended: /);
  });
});
