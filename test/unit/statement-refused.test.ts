import pg from 'pg';
import { isStatementRefused } from '../../src/db/database';

const URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

describe('isStatementRefused', () => {
  it('should call an error the server answered a refusal, and a lost connection not', async () => {
    const client = new pg.Client({ connectionString: URL });
    client.on('error', () => undefined); // the dropped connection is reported here too
    await client.connect();
    try {
      const refused = await client.query("SELECT 'x'::int").catch((e: unknown) => e);
      expect(isStatementRefused(refused)).toBe(true);
      // The connection drops while a statement runs: its outcome is unknown to the client.
      const pending = client.query('SELECT pg_sleep(5)').catch((e: unknown) => e);
      setTimeout(() => (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy(), 100);
      const lost = await pending;
      expect(lost).toBeInstanceOf(Error);
      expect(isStatementRefused(lost)).toBe(false);
    } finally {
      await client.end().catch(() => undefined);
    }
    expect(isStatementRefused(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))).toBe(false);
  });
});
