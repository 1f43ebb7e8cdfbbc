import { SpanStatusCode, context, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';

/**
 * The service's own spans (payment creation, routing, gateway attempts, the payment writes),
 * through the OpenTelemetry API: with tracing off (no SDK registered) every call here is the
 * API's no-op, a few allocations at most. Attributes name ids, types and outcomes, never card
 * data or customer details.
 */
const tracer = trace.getTracer('payorch');

/** The request id the service gives every HTTP request (X-Request-Id), on its server span. */
export const REQUEST_ID_ATTRIBUTE = 'payorch.request_id';

/**
 * Runs `fn` inside a span named `name`, which ends when `fn` settles; a failure sets the span's
 * status to error with the error's code (a DomainError's) or name, no message.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, links?: Link[]): Promise<T> {
  return tracer.startActiveSpan(name, { attributes, links }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      const e = err as { code?: unknown; name?: unknown } | null;
      const type = typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'Error';
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: type });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The context active now, to run later work in (work queued by one request and done for several). */
export function activeContext(): Context {
  return context.active();
}

/** Whether `ctx` holds a span being recorded: false whenever tracing is off. */
export function tracedIn(ctx: Context): boolean {
  return trace.getSpan(ctx)?.isRecording() === true;
}

/** Runs `fn` in `ctx` (see activeContext). */
export function inContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/** A link to the span active in `ctx`, if any. */
export function linkTo(ctx: Context): Link | undefined {
  const span = trace.getSpan(ctx);
  return span ? { context: span.spanContext() } : undefined;
}
