import pg from 'pg';
import { isStatementRefused } from '../../src/db/database';
import { waitFor } from '../helpers/wait';

const URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

describe('isStatementRefused', () => {
  it('should call an error the server answered a refusal, and a lost connection not', async () => {
    const client = new pg.Client({ connectionString: URL });
    client.on('error', () => undefined); // the dropped connection is reported here too
    await client.connect();
    const watcher = new pg.Client({ connectionString: URL });
    await watcher.connect();
    try {
      const refused = await client.query("SELECT 'x'::int").catch((e: unknown) => e);
      expect(isStatementRefused(refused)).toBe(true);
      // The connection drops while a statement runs: its outcome is unknown to the client.
      const pending = client.query('SELECT pg_sleep(5)').catch((e: unknown) => e);
      const { processID } = client as unknown as { processID: number };
      await waitFor(async () => (await watcher.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query = 'SELECT pg_sleep(5)'", [processID])).rowCount === 1, { what: 'the server to run the statement' });
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      const lost = await pending;
      expect(lost).toBeInstanceOf(Error);
      expect(isStatementRefused(lost)).toBe(false);
    } finally {
      await client.end().catch(() => undefined);
      await watcher.end();
    }
    expect(isStatementRefused(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))).toBe(false);
  });
});
