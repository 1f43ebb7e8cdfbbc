import { ConnectionError } from 'sequelize';
import { DomainError, isDomainError } from '../core/errors';

// SQLSTATE classes meaning "no database to talk to": 08 connection exceptions, 57P01–57P03
// (administrator/crash shutdown, cannot connect now), 53300 too many connections.
const UNAVAILABLE_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[1-3]|53300)$/;
const UNAVAILABLE_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// SQLite: the lock was not granted within the busy timeout, or the file cannot be opened.
const UNAVAILABLE_SQLITE = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_CANTOPEN']);
// What pg's client throws, without a code, for a connection that died or never came up.
const UNAVAILABLE_PG_MESSAGE = /^(Connection terminated|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect)/;

// Text PostgreSQL cannot store (a NUL, an unpaired surrogate): the caller's input, not ours.
const INVALID_TEXT_SQLSTATE = new Set(['22021', '22P05']);

type DriverError = { code?: unknown; message?: unknown; parent?: unknown; original?: unknown; cause?: unknown };

/** `err` and the driver errors Sequelize wrapped in it, outermost first. */
function* chain(err: unknown): Generator<DriverError> {
  let e = err as DriverError | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    yield e;
    e = (e.parent ?? e.original ?? e.cause) as DriverError | undefined;
  }
}

const codeOf = (e: DriverError) => (typeof e.code === 'string' ? e.code : '');

/**
 * Whether `err` says the database could not be reached or gave up on the connection, as
 * opposed to refusing the statement itself.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (const e of chain(err)) {
    if (e instanceof ConnectionError) return true; // refused, timed out, host not found, pool acquire timeout…
    const code = codeOf(e);
    if (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SOCKET.has(code) || UNAVAILABLE_SQLITE.has(code)) return true;
    if (!code && typeof e.message === 'string' && UNAVAILABLE_PG_MESSAGE.test(e.message)) return true;
  }
  return false;
}

/**
 * The one translation of driver errors, applied inside the database layer so REST and GraphQL
 * see the same DomainError: connection-class failures are `service_unavailable`, text the
 * database cannot store `invalid_parameter`. Any other refusal (a unique violation, say) stays
 * the driver's error for the caller that looks for it (isUniqueViolation). The driver's error
 * is kept as `cause`.
 */
export function translateDatabaseError(err: unknown): unknown {
  if (isDomainError(err)) return err;
  if (isDatabaseUnavailable(err)) {
    return new DomainError('service_unavailable', 'The database is unavailable; try again shortly', undefined, { cause: err });
  }
  for (const e of chain(err)) {
    if (INVALID_TEXT_SQLSTATE.has(codeOf(e))) {
      return new DomainError('invalid_parameter', 'Text may not contain NUL or invalid characters', undefined, { cause: err });
    }
  }
  return err;
}
