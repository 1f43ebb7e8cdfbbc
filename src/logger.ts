import pino, { type DestinationStream, type Logger } from 'pino';
import { redactPanBounded } from './core/card';
import { traceLogFields, tracingOn } from './observability/tracing';

export type { Logger };

/**
 * JSON logs. Request bodies are never logged; the redact list is a second line of defence for
 * anything that carries a secret or card data by name.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: {
        paths: [
          'authorization', '*.authorization', 'headers.authorization', 'req.headers.authorization',
          'secret', '*.secret', 'card', '*.card', 'number', '*.number', 'cvc', '*.cvc', 'credentials', '*.credentials',
        ],
        censor: '[redacted]',
      },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // Traced, a line written inside a span names it (traceId, spanId): a request's lines lead
      // to its trace. Off, no mixin runs.
      ...(tracingOn() ? { mixin: traceLogFields } : {}),
    },
    // Asynchronous writes to stdout: lines logged while a write is in flight go out together,
    // so a busy server does not pay one blocking write per request. Pino flushes at exit.
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

/**
 * The logger of the one access line per request: `logger` without the redaction by field name,
 * which walks every key of every line (`*.secret`, …) and cost a busy server about 5 µs and a
 * copy of the line per request. The access line's fields are fixed and none of them carries a
 * secret by name (id, method, path with card numbers masked, status, latency, account, mode);
 * everything else keeps the redaction.
 */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}

/**
 * Error fields safe to log: no SQL parameters, no request data. A card number quoted in a
 * message (a library echoing a value it refused) is masked as a last line of defence.
 */
export function errorForLog(err: unknown): { name?: string; message?: string; stack?: string; cause?: { name?: string; message?: string } } {
  if (err instanceof Error) {
    const logged = { name: err.name, message: redactPanBounded(err.message, 4000), stack: err.stack === undefined ? undefined : redactPanBounded(err.stack, 16_000) };
    // A translated error (a driver failure behind service_unavailable): what the driver said.
    // An error made by native code (sqlite3's) may come from another realm than `Error` (jest's sandbox).
    const { cause } = err as { cause?: { name?: unknown; message?: unknown } };
    if (cause !== null && typeof cause === 'object' && typeof cause.message === 'string') {
      return { ...logged, cause: { name: typeof cause.name === 'string' ? cause.name : 'Error', message: redactPanBounded(cause.message, 4000) } };
    }
    return logged;
  }
  return { message: redactPanBounded(String(err), 4000) };
}
