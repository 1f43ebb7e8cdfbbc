import { invalidState } from './errors';

/**
 * States as data (ARCHITECTURE.md): each object with a status has one table of the moves it
 * allows, made with `defineMoves`, and every write of its status goes through that table: the
 * status written, the timestamp column it stamps and the event written with it (in the same
 * transaction) are read from the move's row, never spelled where the write happens. A new rule
 * is one line in the table.
 *
 * The table is pure data; the object's store writes what `columns` (an object or a model's
 * attributes) or `sqlSet` (a statement's SET list) give, guarded by `sqlFrom` (so a row whose
 * status moved meanwhile is left alone), and its service records the move's `event`.
 */

/**
 * Who makes a move: `merchant`, a request with the account's key; `customer`, a hosted page's
 * public request; `system`, the service itself (a gateway's answer, recovery, a job).
 */
export type Actor = 'merchant' | 'customer' | 'system';

export interface MoveRule<Status extends string, Event extends string, Stamp extends string> {
  /** The statuses the move may start from; empty for a move that creates the object (its insert writes `to`). */
  readonly from: readonly Status[];
  readonly to: Status;
  /** Who may make it (documentation of the paths that do; the table's tests check them). */
  readonly by: readonly Actor[];
  /** The event written with it, in the same transaction; null: none. */
  readonly event: Event | null;
  /** The timestamp attribute the move sets to its time (`completedAt`, `paidAt`…); null: none. */
  readonly stamps: Stamp | null;
}

/** The status and the stamped timestamp a move writes, keyed by attribute name (`{ status, completedAt }`). */
export type MovedColumns<Status extends string, Stamp extends string, At> = { status: Status } & Partial<Record<Stamp, At>>;

export interface Moves<Status extends string, Move extends string, Event extends string, Stamp extends string> {
  /** What the object is called in messages (`checkout session`). */
  readonly object: string;
  readonly table: Readonly<Record<Move, MoveRule<Status, Event, Stamp>>>;
  rule(move: Move): MoveRule<Status, Event, Stamp>;
  /** The event the move writes, for a caller that needs one (thrown, a programming error, when the table gives none). */
  eventOf(move: Move): Event;
  /** Whether an object in `from` may make the move. */
  can(from: Status, move: Move): boolean;
  /** The move's rule; 422 `invalid_state` when an object in `from` may not make it. */
  check(from: Status, move: Move): MoveRule<Status, Event, Stamp>;
  /**
   * What the move writes: `{ status: to }`, and `{ [stamps]: at }` when it stamps a time. `at` is
   * the time as the caller's object holds it (a Date for a model, ISO text for an API object).
   */
  columns<At>(move: Move, at: At): MovedColumns<Status, Stamp, At>;
  /**
   * The same as a statement's SET list: `status = 'complete', completed_at = <at>`, where `at`
   * is SQL (a bound parameter's placeholder, or a column of the statement's input; needed only by
   * a move that stamps). Stamps are written snake_case; the status is a literal, so the
   * statement's text is one per move.
   */
  sqlSet(move: Move, at?: string): string;
  /** The guard of a move's write (or several moves' sharing one statement): `status IN ('open')`. */
  sqlFrom(moves: Move | readonly Move[], column?: string): string;
}

export interface MoveOptions<Move extends string> {
  /** What the object is called in messages: `A complete checkout session cannot be expired`. */
  object: string;
  /** How a refusal names each move: `expired`, `paid` (`… cannot be paid; allowed from open`). */
  words: Readonly<Record<Move, string>>;
}

const SQL_SAFE = /^[a-z_]+$/;

/** `completedAt` → `completed_at`. */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * The moves of one kind of object. `Status`: its statuses; `Move`: the moves' names; `Event`:
 * the events they write; `Stamp`: the timestamp attributes they set.
 */
export function defineMoves<Status extends string, Move extends string, Event extends string, Stamp extends string = never>(
  table: Readonly<Record<Move, MoveRule<Status, Event, Stamp>>>,
  options: MoveOptions<Move>,
): Moves<Status, Move, Event, Stamp> {
  for (const [move, rule] of Object.entries<MoveRule<Status, Event, Stamp>>(table)) {
    // Statuses and stamps become SQL text (sqlSet, sqlFrom): only plain names are allowed.
    for (const name of [rule.to, ...rule.from, ...(rule.stamps ? [rule.stamps] : [])]) {
      if (!SQL_SAFE.test(snakeCase(name))) throw new Error(`move ${move}: '${name}' is not a plain name`);
    }
    if (rule.by.length === 0) throw new Error(`move ${move}: nobody may make it`);
  }
  const spaced = (status: Status) => status.replace(/_/g, ' ');
  const article = (word: string) => (/^[aeiou]/.test(word) ? 'An' : 'A');
  const literal = (status: Status) => `'${status}'`;
  // The SQL texts, made once each (they are on hot paths: a payment's settling write).
  const sql = new Map<string, string>();
  const once = (key: string, make: () => string) => sql.get(key) ?? sql.set(key, make()).get(key) as string;
  return {
    object: options.object,
    table,
    rule: (move) => table[move],
    eventOf(move) {
      const { event } = table[move];
      if (event === null) throw new Error(`move ${move} writes no event`);
      return event;
    },
    can: (from, move) => table[move].from.includes(from),
    check(from, move) {
      const rule = table[move];
      if (!rule.from.includes(from)) {
        const allowed = rule.from.length === 0 ? `only a new ${options.object} is` : `allowed from ${rule.from.map(spaced).join(', ')}`;
        throw invalidState(`${article(from)} ${spaced(from)} ${options.object} cannot be ${options.words[move]}; ${allowed}`);
      }
      return rule;
    },
    columns<At>(move: Move, at: At) {
      const rule = table[move];
      const written = { status: rule.to } as MovedColumns<Status, Stamp, At>;
      if (rule.stamps) (written as Record<string, unknown>)[rule.stamps] = at;
      return written;
    },
    sqlSet(move, at) {
      const rule = table[move];
      if (!rule.stamps) return once(`set ${move}`, () => `status = ${literal(rule.to)}`);
      if (at === undefined) throw new Error(`move ${move} stamps ${rule.stamps}: give its time`);
      return `status = ${literal(rule.to)}, ${snakeCase(rule.stamps)} = ${at}`;
    },
    sqlFrom(moves, column = 'status') {
      const list: readonly Move[] = typeof moves === 'string' ? [moves as Move] : moves;
      return once(`from ${list.join(' ')} ${column}`, () => {
        const from = [...new Set(list.flatMap((m) => table[m].from))];
        if (from.length === 0) throw new Error(`moves ${list.join(', ')} start from no status: no guard to write`);
        return from.length === 1 ? `${column} = ${literal(from[0])}` : `${column} IN (${from.map(literal).join(', ')})`;
      });
    },
  };
}
