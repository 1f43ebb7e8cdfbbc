import fs from 'node:fs';
import https from 'node:https';
import { freshDatabase, type TestDatabase } from '../helpers/db';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import { waitFor } from '../helpers/wait';

let database: TestDatabase;
let instance: SpawnedInstance;
let ca: string;

beforeAll(async () => {
  database = await freshDatabase();
  // The first start creates the certificate and prints the default account's keys.
  // NODE_ENV as a deployment has it, not jest's `test`: libraries behave differently under `test`
  // (Apollo Server installs its own SIGTERM handler outside it, which held the exit 25 s).
  instance = await spawnInstance({ DATABASE_URL: database.url, DATA_DIR: database.dataDir, NODE_ENV: 'production' }, '');
  ca = fs.readFileSync(`${database.dataDir}/tls/cert.pem`, 'utf8');
}, 90_000);
afterAll(async () => {
  await instance?.stop('SIGKILL');
  await database.drop();
});

describe('start-up and graceful shutdown', () => {
  it('should print the default account keys once on an empty database', () => {
    const printed = instance.output.join('');
    expect(printed).toMatch(/test key: sk_test_[0-9A-Za-z]{43}/);
    expect(printed).toMatch(/live key: sk_live_[0-9A-Za-z]{43}/);
  });

  it('should finish an in-flight request on SIGTERM, then exit 0', async () => {
    const testKey = /test key: (sk_test_\S+)/.exec(instance.output.join(''))![1];
    const body = JSON.stringify({ email: 'inflight@example.com' });
    const url = new URL('/v1/customers', instance.baseUrl);
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = https.request(url, {
        method: 'POST',
        ca,
        servername: 'localhost',
        // Answered `100 Continue` as soon as the server has parsed the headers: the request is then
        // the server's (in flight, its connection no longer idle), whatever its body does.
        headers: { authorization: `Bearer ${testKey}`, 'content-type': 'application/json', 'content-length': String(body.length), expect: '100-continue' },
      }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      });
      req.on('error', reject);
      // Half the body now; SIGTERM arrives while the request is in flight; the rest once the
      // service says it is shutting down.
      req.write(body.slice(0, 10));
      req.once('continue', () => {
        instance.child.kill('SIGTERM');
        waitFor(() => instance.output.join('').includes('shutting down'), { timeoutMs: 10_000, what: 'the service to say it is shutting down' })
          .then(() => req.end(body.slice(10)), reject);
      });
    });
    const res = await response;
    expect(res.status).toBe(201);
    expect(JSON.parse(res.text).data.email).toBe('inflight@example.com');
    const code = await instance.stop();
    expect(code).toBe(0);
    expect(instance.output.join('')).toContain('shutting down');
  }, 30_000);

  it('should not print keys again on a second start', async () => {
    const second = await spawnInstance({ DATABASE_URL: database.url, DATA_DIR: database.dataDir }, ca);
    try {
      expect(second.output.join('')).not.toContain('test key:');
      const health = await second.request('GET', '/health');
      expect(health.status).toBe(200);
    } finally {
      await second.stop();
    }
  }, 90_000);
});
