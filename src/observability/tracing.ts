import { trace } from '@opentelemetry/api';
import { ConfigError, loadConfig, type Config } from '../config';
import type { TracingSdk } from './tracing-sdk';

/**
 * Traces over OTLP/HTTP, on only when the configuration names a collector
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). This file is what the rest
 * of the service sees of it; the OpenTelemetry SDK and its instrumentations live in
 * tracing-sdk.ts, loaded only when tracing is on, so an instance without it loads none of them.
 */

interface ActiveTracing extends TracingSdk {
  endpoint: string;
}

let active: ActiveTracing | undefined;

/**
 * Starts tracing for `payorch start` when the configuration asks for it. It must run before
 * anything loads http, koa, pg or graphql: the instrumentations patch those modules as they are
 * required (bin/payorch.js calls this before it loads the CLI). A configuration error is left for
 * the command to report, as it reports every other.
 */
export function startTracingFor(argv: string[]): void {
  if (argv[2] !== 'start') return;
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) return;
    throw err;
  }
  if (config.tracing) startTracing(config.tracing);
}

export function startTracing(options: NonNullable<Config['tracing']>): void {
  if (active) return;
  // Loaded here, not imported: with tracing off the SDK is never loaded.
  const { startTracingSdk } = require('./tracing-sdk') as typeof import('./tracing-sdk');
  active = { endpoint: options.endpoint, ...startTracingSdk(options.serviceName, options.disabledInstrumentations) };
}

/** Where spans are exported (credentials and query left out), or undefined when tracing is off. */
export function tracingEndpoint(): string | undefined {
  if (!active) return undefined;
  try {
    const url = new URL(active.endpoint);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return active.endpoint;
  }
}

/** Sends the spans still buffered and stops the exporter; nothing to do when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stopping = active;
  active = undefined;
  await stopping?.shutdown();
}

/**
 * The log fields of the span active where a line is written (pino's mixin), so that a request's
 * log lines lead to its trace. Only installed when tracing is on.
 */
export function traceLogFields(): { traceId?: string; spanId?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { traceId, spanId };
}

/** Names the traced HTTP request being served by its route template (`/v1/payments/:id`); nothing when tracing is off. */
export function nameTracedRoute(route: string): void {
  active?.nameRoute(route);
}

export function tracingOn(): boolean {
  return active !== undefined;
}
