import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readJson } from '../../db/database';
import { Filter, listPage } from '../../db/list';
import { Params } from '../../db/params';
import { cteList, type CtePart } from '../../db/statement';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import { streamScopeKey, type PublishedEvent, type StreamScope } from '../../core/event-bus';
import type { WrittenMark } from '../../core/written-marks';
import { EventModel } from './event.model';

export interface ApiEvent {
  id: string;
  object: 'event';
  type: string;
  createdAt: string;
  livemode: boolean;
  data: { object: Record<string, unknown> };
}

type Scope = { accountId: string; mode: string };

/**
 * Where a live stream reads on from, in the order events were written (`seq`, migration 0029):
 * after an event (with its seq when known), or from the first written of several events, that one included.
 */
export type StreamPosition = { after: string; seq?: number } | { from: readonly string[] };

/** An event of a batch part: its row, and the id of the caller's row holding its object's JSON. */
export interface EventPartRow {
  event: ApiEvent;
  accountId: string;
  mode: string;
  sourceId: string;
}

/**
 * SQL for an events row (alias `e`) as the JSON text of the event: the same bytes as
 * JSON.stringify of the API object (`id`, `object`, `type`, `createdAt`, `livemode`, `data`;
 * ids and types never need escaping). For other stores' batch parts that copy an event.
 */
export function eventJsonSql(e: string): string {
  return `'{"id":"' || ${e}.id || '","object":"event","type":"' || ${e}.type || '","createdAt":"'
    || to_char(${e}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '","livemode":'
    || CASE WHEN ${e}.mode = 'live' THEN 'true' ELSE 'false' END || ',"data":' || ${e}.data || '}'`;
}

const COLUMNS = 'id, type, data, created_at, mode';

/*
 * An event's `seq`, the order events were written (migration 0029): on PostgreSQL the column's
 * default, the sequence events_stream_seq (the batch statements below take it too); on SQLite one
 * more than the account and mode's highest (events_stream_idx), which its one writer at a time
 * makes the order of the commits as well.
 */
const INSERT_PG = 'INSERT INTO events (id, account_id, mode, type, object_id, data, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)';
const INSERT_SQLITE = `INSERT INTO events (id, account_id, mode, type, object_id, data, created_at, seq)
  VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE account_id = $2 AND mode = $3))`;

/** PostgreSQL: the last seq events_stream_seq gave (0 before its first). */
export async function sequenceTop(db: Database): Promise<number> {
  const [seq] = await db.select<{ last_value: unknown; is_called: unknown }>('SELECT last_value, is_called FROM events_stream_seq');
  return Number(seq.last_value) - (seq.is_called === true || seq.is_called === 't' ? 0 : 1);
}

/**
 * Where events are kept. Writing an event is on every state change's path (one bound INSERT in
 * the change's transaction, or a CTE part of the payments' PostgreSQL group commit); reading
 * events back by id is the live fan-out's path. The dialects differ only here.
 */
export class EventStore {
  constructor(private readonly db: Database) {}

  async insert(t: Transaction, event: ApiEvent, scope: Scope): Promise<void> {
    await this.db.execute(this.db.dialect === 'postgres' ? INSERT_PG : INSERT_SQLITE,
      [event.id, scope.accountId, scope.mode, event.type, objectIdOf(event), JSON.stringify(event.data), new Date(event.createdAt)],
      t,
    );
  }

  /** Whether the scope has an event of `type` created after `since` (events_type_idx). */
  async existsSince(scope: Scope, type: string, since: Date, t?: Transaction): Promise<boolean> {
    const rows = await this.db.select(
      'SELECT 1 AS found FROM events WHERE account_id = $1 AND mode = $2 AND type = $3 AND created_at > $4 LIMIT 1',
      [scope.accountId, scope.mode, type, since], t,
    );
    return rows.length > 0;
  }

  /**
   * PostgreSQL: many events and the writes that go with them (`hooks`: data-modifying CTE
   * bodies over the inserted rows, named `evt`) as one statement, each event's object bound once
   * (as JSON inside the rows' JSON: PostgreSQL keeps a `json` value's text as given, so the stored
   * text is JSON.stringify's). SQLite: false, and the caller writes them one by one.
   */
  async insertManyWith(t: Transaction, rows: ReadonlyArray<{ event: ApiEvent; accountId: string; mode: string }>, hooks: ReadonlyArray<(p: Params, eventCte: string) => string>): Promise<boolean> {
    if (this.db.dialect !== 'postgres') return false;
    if (rows.length === 0) return true;
    const p = new Params();
    const bound = rows.map(({ event, accountId, mode }, n) => ({
      id: event.id, account_id: accountId, mode, type: event.type, object_id: objectIdOf(event), data: event.data, created_at: event.createdAt, n,
    }));
    const parts: CtePart[] = [{
      name: 'evt',
      sql: `INSERT INTO events (id, account_id, mode, type, object_id, data, created_at)
        SELECT v.id, v.account_id, v.mode, v.type, v.object_id, v.data::text, v.created_at
          FROM json_to_recordset(${p.add(this.db.jsonParam(bound), 'json')})
               AS v(id text, account_id text, mode text, type text, object_id text, data json, created_at timestamptz, n int)
         ORDER BY v.n
        RETURNING id, account_id, mode, type, data, created_at`,
    }];
    hooks.forEach((hook, i) => parts.push({ name: `evt_hook${i}`, sql: hook(p, 'evt') }));
    await this.db.select(`WITH ${cteList(parts)} SELECT 1 AS done`, p.values, t);
    return true;
  }

  /**
   * PostgreSQL: inserts `rows` as a CTE part of the caller's statement. Each event's object is
   * read from the caller's relation `source` (its `id` column is the row's `sourceId`,
   * `jsonColumn` the object's JSON text), so it is not bound a second time; an event is inserted
   * only if the CTE `guard` returned its `sourceId` as `id`. The part returns the inserted rows'
   * `id`, `account_id`, `mode`, `type`, `data` and `created_at` (see eventJsonSql). The text does
   * not depend on the number of events (they are bound as one JSON parameter). The events take
   * their seq in the order of `rows` (the order they are published), whatever order the join
   * yields them in.
   */
  insertPart(name: string, rows: EventPartRow[], p: Params, guard: string, source: { relation: string; jsonColumn: string }): CtePart {
    const bound = rows.map(({ event, accountId, mode, sourceId }, n) => ({
      id: event.id, account_id: accountId, mode, type: event.type, object_id: objectIdOf(event), created_at: event.createdAt, source: sourceId, n,
    }));
    return {
      name,
      sql: `INSERT INTO events (id, account_id, mode, type, object_id, data, created_at)
        SELECT v.id, v.account_id, v.mode, v.type, v.object_id, '{"object":' || s.${source.jsonColumn} || '}', v.created_at
          FROM json_to_recordset(${p.add(this.db.jsonParam(bound), 'json')})
               AS v(id text, account_id text, mode text, type text, object_id text, created_at timestamptz, source text, n int)
          JOIN ${source.relation} s ON s.id = v.source
         WHERE v.source IN (SELECT id FROM ${guard})
         ORDER BY v.n
        RETURNING id, account_id, mode, type, data, created_at`,
    };
  }

  find(scope: Scope, id: string): Promise<ApiEvent | null> {
    return findEvent(scope, id);
  }

  /** Events as the bus carries them, by id, in one statement whatever their number. */
  async loadPublished(ids: string[]): Promise<PublishedEvent[]> {
    const rows = await this.db.select(`SELECT ${COLUMNS}, account_id FROM events WHERE ${this.db.inJsonList('id', '$1')}`, [this.db.jsonParam(ids)]);
    return rows.map(toPublished);
  }

  /** One account and mode's events from `since` on, oldest first, after the `after` cursor. */
  async loadPublishedSince(scope: StreamScope, since: Date, after: { createdAt: string; id: string } | undefined, limit: number): Promise<PublishedEvent[]> {
    const cursor = after ? ' AND (created_at > $4 OR (created_at = $4 AND id > $5))' : '';
    const rows = await this.db.select(
      `SELECT ${COLUMNS}, account_id FROM events WHERE account_id = $1 AND mode = $2 AND created_at >= $3${cursor}
       ORDER BY created_at, id LIMIT ${Math.trunc(limit)}`,
      [scope.accountId, scope.livemode ? 'live' : 'test', since, ...(after ? [new Date(after.createdAt), after.id] : [])],
    );
    return rows.map(toPublished);
  }

  /**
   * One account and mode's events written after `afterSeq` (in seq order) and stamped before
   * `createdBefore`: what a read-back by `created_at` from `createdBefore` on does not find, such
   * as an event stamped at a test clock's time in the past (events_stream_idx).
   */
  async loadWrittenAfter(scope: StreamScope, afterSeq: number, createdBefore: Date, limit: number): Promise<PublishedEvent[]> {
    const rows = await this.db.select(
      `SELECT ${COLUMNS}, account_id, seq FROM events WHERE account_id = $1 AND mode = $2 AND seq > $3 AND created_at < $4
       ORDER BY seq LIMIT ${Math.trunc(limit)}`,
      [scope.accountId, scope.livemode ? 'live' : 'test', afterSeq, createdBefore],
    );
    return rows.map(toPublished);
  }

  /**
   * How far events have been written now: on PostgreSQL the sequence's last value, for every
   * scope; on SQLite each of `scopes`' highest seq (a scope without events: 0).
   */
  async writtenMark(scopes: readonly StreamScope[]): Promise<WrittenMark> {
    if (this.db.dialect === 'postgres') {
      const top = await sequenceTop(this.db);
      return () => top;
    }
    const marks = new Map<string, number>();
    for (const scope of scopes) marks.set(streamScopeKey(scope), (await this.lastSeq(scope)) ?? 0);
    return (scope) => marks.get(streamScopeKey(scope));
  }

  /** The position after an event of the account and mode, or null when the account and mode have no such event. */
  async positionOf(scope: Scope, id: string): Promise<StreamPosition | null> {
    const rows = await this.db.select('SELECT id, seq FROM events WHERE id = $1 AND account_id = $2 AND mode = $3', [id, scope.accountId, scope.mode]);
    if (rows.length === 0) return null;
    return rows[0].seq === null ? { after: rows[0].id as string } : { after: rows[0].id as string, seq: Number(rows[0].seq) };
  }

  /**
   * The next `limit` events of the account and mode from `position` in the order they were
   * written (seq), oldest first; only `types` when given (null: every type). A range of
   * events_stream_idx starting at the position's seq (looked up by id in the same statement),
   * read one page at a time by the live streams that resume or fell behind.
   */
  async loadAfter(scope: Scope, position: StreamPosition, types: readonly string[] | null, limit: number, upTo: number | null = null): Promise<PublishedEvent[]> {
    const start = 'after' in position
      ? 'seq > (SELECT seq FROM events WHERE id = $3 AND account_id = $1 AND mode = $2)'
      // By id alone (the primary key; the ids are the stream's own, of the scope): with the scope's
      // columns too, SQLite would walk the scope's events in events_stream_idx to find them.
      : `seq >= (SELECT MIN(seq) FROM events WHERE ${this.db.inJsonList('id', '$3')})`;
    const values: unknown[] = [scope.accountId, scope.mode, 'after' in position ? position.after : this.db.jsonParam([...position.from])];
    const typed = types === null ? '' : ` AND ${this.db.inJsonList('type', '$4')}`;
    if (types !== null) values.push(JSON.stringify(types));
    let below = '';
    if (upTo !== null) {
      values.push(upTo);
      below = ` AND seq <= $${values.length}`;
    }
    const rows = await this.db.select(
      `SELECT ${COLUMNS}, account_id, seq FROM events WHERE account_id = $1 AND mode = $2 AND ${start}${typed}${below}
       ORDER BY seq LIMIT ${Math.trunc(limit)}`,
      values,
    );
    return rows.map(toPublished);
  }

  /**
   * The account and mode's next `limit` events written after `afterSeq` (null: from the first),
   * up to `upTo` included (null: every one there is), in the order they were written: the ordered
   * live streams' tail (EventTail), a range of events_stream_idx.
   */
  async loadSeqRange(scope: StreamScope, afterSeq: number | null, upTo: number | null, limit: number): Promise<PublishedEvent[]> {
    const values: unknown[] = [scope.accountId, scope.livemode ? 'live' : 'test'];
    let range = '';
    if (afterSeq !== null) {
      values.push(afterSeq);
      range += ` AND seq > $${values.length}`;
    }
    if (upTo !== null) {
      values.push(upTo);
      range += ` AND seq <= $${values.length}`;
    }
    const rows = await this.db.select(
      `SELECT ${COLUMNS}, account_id, seq FROM events WHERE account_id = $1 AND mode = $2 AND seq IS NOT NULL${range}
       ORDER BY seq LIMIT ${Math.trunc(limit)}`,
      values,
    );
    return rows.map(toPublished);
  }

  /**
   * PostgreSQL: for each of `ranges`, its scope's next `limit` events written after its `afterSeq`,
   * up to `upTo` included, in one statement (a range of events_stream_idx each): what
   * `loadSeqRange` reads for one scope, for the tail's scopes all at once. Ordered by scope, then
   * seq. SQLite: null (the caller reads each scope).
   */
  async loadSeqRanges(ranges: ReadonlyArray<{ scope: StreamScope; afterSeq: number }>, upTo: number, limit: number): Promise<PublishedEvent[] | null> {
    if (this.db.dialect !== 'postgres') return null;
    if (ranges.length === 0) return [];
    const bound = ranges.map(({ scope, afterSeq }, n) => ({ account_id: scope.accountId, mode: scope.livemode ? 'live' : 'test', after_seq: afterSeq, n }));
    const rows = await this.db.select(
      `SELECT e.id, e.type, e.data, e.created_at, e.mode, e.account_id, e.seq
         FROM json_to_recordset($1::json) AS r(account_id text, mode text, after_seq bigint, n int)
        CROSS JOIN LATERAL (
          SELECT ${COLUMNS}, account_id, seq FROM events
           WHERE account_id = r.account_id AND mode = r.mode AND seq > r.after_seq AND seq <= $2
           ORDER BY seq LIMIT ${Math.trunc(limit)}
        ) e
        ORDER BY r.n, e.seq`,
      [this.db.jsonParam(bound), upTo],
    );
    return rows.map(toPublished);
  }

  /** The highest seq of the account and mode's events, or null when it has none (SQLite's tail starts there). */
  async lastSeq(scope: StreamScope): Promise<number | null> {
    const rows = await this.db.select<{ seq: unknown }>(
      'SELECT MAX(seq) AS seq FROM events WHERE account_id = $1 AND mode = $2', [scope.accountId, scope.livemode ? 'live' : 'test'],
    );
    return rows[0]?.seq === null || rows[0]?.seq === undefined ? null : Number(rows[0].seq);
  }

  /**
   * A page of events; `types`, when given, are the only types listed (and counted): the key's
   * readable ones, narrowed by the input's `types`; `type`: only that type; `objectId`: only the events of that
   * object (`data.object.id`, events_object_idx); `objectIds`: of any of those objects (none for an
   * empty list); `createdAfter`/`createdBefore`: strictly between.
   */
  list<O extends ListOptions = Counted>(
    scope: Scope,
    input: { type?: string; objectId?: string; objectIds?: string[]; createdAfter?: Date; createdBefore?: Date; page: number; pageSize: number; sortField: 'createdAt'; sortDirection: 'asc' | 'desc' },
    types: readonly string[] | null = null,
    options?: O,
  ): Promise<PageFor<ApiEvent, O>> {
    // One type: events_type_idx's equality; several: one JSON parameter whatever their number, an
    // index condition on the same index (see Database.inJsonList).
    const single = input.type ?? (types !== null && types.length === 1 ? types[0] : undefined);
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, object_id: input.objectId, type: single });
    // createdAfter/createdBefore are listPage's (every list's): a range of events_list_idx (or
    // events_type_idx, events_object_idx): (account_id, mode[, type | object_id], created_at, id).
    const objectIds = input.objectIds;
    if (objectIds !== undefined) filter.raw((param) => this.db.inJsonList('object_id', param(this.db.jsonParam([...new Set(objectIds)]))));
    if (types !== null && !(types.length === 1 && types[0] === single)) filter.raw((param) => this.db.inJsonList('type', param(JSON.stringify(types))));
    // Without statistics SQLite would rather walk the account's events in order (events_list_idx,
    // no sort) than look each id up: the time it takes would grow with the account.
    const table = objectIds !== undefined && this.db.dialect === 'sqlite' ? 'events INDEXED BY events_object_idx' : 'events';
    return listPage(this.db, { table, columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toApiEvent }, options);
  }

  /** Several events of the account and mode by id, in one statement whatever their number (GraphQL's `node` and links). */
  async findMany(scope: Scope, ids: readonly string[]): Promise<ApiEvent[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.select(
      `SELECT ${COLUMNS} FROM events WHERE ${this.db.inJsonList('id', '$1')} AND account_id = $2 AND mode = $3`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
    return rows.map(toApiEvent);
  }
}

/** The id of the object an event reports (its `object_id` column), or null. */
function objectIdOf(event: ApiEvent): string | null {
  const id = event.data.object?.id;
  return typeof id === 'string' ? id : null;
}

/** One event of the account and mode, or null. */
export async function findEvent(scope: Scope, id: string): Promise<ApiEvent | null> {
  const row = await EventModel.findOne({
    attributes: ['id', 'type', 'data', 'createdAt', 'mode'], where: { id, accountId: scope.accountId, mode: scope.mode }, raw: true,
  });
  return row && toApiEvent({ id: row.id, type: row.type, data: row.data, created_at: row.createdAt, mode: row.mode });
}

function toPublished(row: Record<string, unknown>): PublishedEvent {
  const event: PublishedEvent = { ...toApiEvent(row), accountId: row.account_id as string };
  if (row.seq !== undefined && row.seq !== null) event.seq = Number(row.seq);
  return event;
}

export function toApiEvent(row: Record<string, unknown>): ApiEvent {
  return {
    id: row.id as string,
    object: 'event',
    type: row.type as string,
    createdAt: isoTime(row.created_at) as string,
    livemode: row.mode === 'live',
    data: readJson(row.data, { object: {} }),
  };
}
