import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The live streams' order (events(after:), a stream that fell behind, the broadcast member that
 * goes on alone): the order events were written, `events.seq`, instead of (created_at, id).
 * created_at is the time of the clock the change ran on, which for a test clock's objects is
 * that clock's time (a month ahead, a year behind): in created_at order a stream resumed after
 * such an event skipped every event written after it but stamped before it.
 *
 * On PostgreSQL seq is the column's default, the sequence `events_stream_seq`; on SQLite
 * EventStore's INSERT gives one more than the account and mode's highest (SQLite has one writer at
 * a time, so there it is also the order of the commits). The events already written are numbered in their
 * old order. `events_stream_idx` (account_id, mode, seq) reads a stream on from a position and
 * answers SQLite's highest.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const db = qi.sequelize;
  await qi.addColumn('events', 'seq', { type: DataTypes.BIGINT, allowNull: true });
  await db.query('UPDATE events SET seq = o.n FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM events) o WHERE o.id = events.id');
  if (db.getDialect() === 'postgres') {
    await db.query('CREATE SEQUENCE events_stream_seq');
    await db.query("SELECT setval('events_stream_seq', (SELECT COALESCE(MAX(seq), 0) + 1 FROM events), false)");
    // Numbered whoever writes them: an instance of the release before this one, still running
    // during a rolling upgrade, inserts events without seq.
    await db.query("ALTER TABLE events ALTER COLUMN seq SET DEFAULT nextval('events_stream_seq')");
  }
  await qi.addIndex('events', ['account_id', 'mode', 'seq'], { name: 'events_stream_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  const db = qi.sequelize;
  await qi.removeIndex('events', 'events_stream_idx');
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await db.query('ALTER TABLE events DROP COLUMN seq');
  if (db.getDialect() === 'postgres') await db.query('DROP SEQUENCE events_stream_seq');
}
