import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT, freshDatabase, type TestDatabase } from '../helpers/db';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster';

// One outage test per dialect run: on PostgreSQL the server itself goes away (a throwaway
// cluster of the test's own), on SQLite another process holds the write lock past the busy
// timeout. Either way both transports must give the same code, quickly.

let app: TestApp;
const gql = (query: string, variables: Record<string, unknown> = {}) =>
  app.request('POST', '/graphql', { key: app.account.testKey, body: { query, variables } });
const listCustomers = () => app.request('GET', '/v1/customers', { key: app.account.testKey });
const createCustomer = (email: string) => app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email } });
const createCustomerMutation = 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }';

/** The error lines logged under a request id. */
const loggedFor = (requestId: string) => app.logs.filter((line) => line.includes(requestId) && line.includes('"level":"error"')).join('');

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await work();
  return { result, ms: Date.now() - started };
}

if (DIALECT === 'postgres') {
  describe('a PostgreSQL outage', () => {
    let cluster: PgCluster;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-outage-'));

    beforeAll(async () => {
      cluster = await startPgCluster();
      const database: TestDatabase = { url: cluster.url, dataDir, drop: async () => undefined };
      app = await startTestApp({ database });
    }, 60_000);
    afterAll(async () => {
      await app?.stop();
      await cluster?.destroy();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }, 60_000);

    it('should answer service_unavailable on REST and GraphQL alike, quickly, and serve again once the database is back', async () => {
      expect((await listCustomers()).status).toBe(200);
      await cluster.stop('immediate');

      // Reads (model calls), writes (a transaction): the same code over both transports.
      const rest = await timed(listCustomers);
      expect(rest.result.status).toBe(503);
      expect(rest.result.body.error.code).toBe('service_unavailable');
      const graphql = await timed(() => gql('{ customers { total } }'));
      expect(graphql.result.body.errors[0].extensions.code).toBe('service_unavailable');
      const restWrite = await timed(() => createCustomer('down@example.com'));
      expect(restWrite.result.status).toBe(503);
      expect(restWrite.result.body.error.code).toBe('service_unavailable');
      const graphqlWrite = await timed(() => gql(createCustomerMutation, { input: { email: 'down@example.com' } }));
      expect(graphqlWrite.result.body.errors[0].extensions.code).toBe('service_unavailable');
      for (const { ms } of [rest, graphql, restWrite, graphqlWrite]) expect(ms).toBeLessThan(10_000);
      // The driver's error is logged with the 503, never shown.
      expect(rest.result.text).not.toMatch(/ECONNREFUSED|Sequelize/);
      for (const requestId of [rest.result.body.error.requestId, graphql.result.body.errors[0].extensions.requestId]) {
        expect(loggedFor(requestId)).toMatch(/ECONNREFUSED|Connection terminated|terminating connection/);
      }

      await cluster.start();
      const back = await listCustomers();
      expect(back.status).toBe(200);
      expect((await createCustomer('back@example.com')).status).toBe(201);
      expect((await gql('{ customers { total } }')).body.data.customers.total).toBe(1);
    }, 60_000);
  });
} else {
  describe('a SQLite database locked by another process', () => {
    let database: TestDatabase;
    let locker: sqlite3.Database;
    const run = (sql: string) => new Promise<void>((resolve, reject) => locker.run(sql, (err) => (err ? reject(err) : resolve())));

    beforeAll(async () => {
      database = await freshDatabase();
      app = await startTestApp({ database, serviceOptions: { sqliteBusyTimeoutMs: 200 } });
      locker = new sqlite3.Database(database.url.slice('sqlite:'.length));
    }, 60_000);
    afterAll(async () => {
      await new Promise((resolve) => locker?.close(resolve));
      await app?.stop();
      await database?.drop();
    }, 60_000);

    it('should answer service_unavailable on REST and GraphQL alike, quickly, and serve again once the lock is released', async () => {
      expect((await createCustomer('first@example.com')).status).toBe(201);
      // Another writer holds SQLite's one write lock (readers still read in WAL mode).
      await run('BEGIN IMMEDIATE');
      await run("UPDATE customers SET name = 'locked' WHERE 0");

      const rest = await timed(() => createCustomer('locked@example.com'));
      expect(rest.result.status).toBe(503);
      expect(rest.result.body.error.code).toBe('service_unavailable');
      const graphql = await timed(() => gql(createCustomerMutation, { input: { email: 'locked@example.com' } }));
      expect(graphql.result.body.errors[0].extensions.code).toBe('service_unavailable');
      for (const { ms } of [rest, graphql]) expect(ms).toBeLessThan(10_000);
      expect(rest.result.text).not.toMatch(/SQLITE_BUSY|Sequelize/);
      for (const requestId of [rest.result.body.error.requestId, graphql.result.body.errors[0].extensions.requestId]) {
        expect(loggedFor(requestId)).toContain('SQLITE_BUSY');
      }

      await run('ROLLBACK');
      expect((await createCustomer('back@example.com')).status).toBe(201);
      expect((await gql('{ customers { total } }')).body.data.customers.total).toBe(2);
    }, 60_000);
  });
}
