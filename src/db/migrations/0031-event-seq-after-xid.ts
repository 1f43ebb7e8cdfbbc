import { type QueryInterface } from 'sequelize';

/**
 * PostgreSQL: an event's `seq` is taken only once its transaction has an id (xid). The ordered
 * live streams (EventTail) read events up to the sequence's last value once every transaction
 * that was running just after they read it has ended: a transaction that took a seq before that
 * read is then one of those, because it had its xid before its seq. With plain nextval a
 * transaction whose first write is the event takes its seq a moment before its xid, and a tail
 * reading in that moment would not wait for it and pass its event by.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const db = qi.sequelize;
  if (db.getDialect() !== 'postgres') return;
  await db.query(`CREATE FUNCTION payorch_next_event_seq() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      PERFORM pg_current_xact_id();
      RETURN nextval('events_stream_seq');
    END $$`);
  await db.query('ALTER TABLE events ALTER COLUMN seq SET DEFAULT payorch_next_event_seq()');
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  const db = qi.sequelize;
  if (db.getDialect() !== 'postgres') return;
  await db.query("ALTER TABLE events ALTER COLUMN seq SET DEFAULT nextval('events_stream_seq')");
  await db.query('DROP FUNCTION payorch_next_event_seq()');
}
