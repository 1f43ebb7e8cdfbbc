import { NodeSDK, api, core } from '@opentelemetry/sdk-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KoaInstrumentation, KoaLayerType } from '@opentelemetry/instrumentation-koa';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { GraphQLInstrumentation } from '@opentelemetry/instrumentation-graphql';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Instrumentation } from '../config';
import { redactPan } from '../core/card';
import { REQUEST_ID_ATTRIBUTE } from './spans';

/**
 * The OpenTelemetry SDK as the service runs it (loaded by tracing.ts only when tracing is on).
 * Spans go over OTLP/HTTP as JSON to the collector the standard OTEL_EXPORTER_OTLP_* variables
 * name, batched (OTEL_BSP_*) and sampled (OTEL_TRACES_SAMPLER) as those variables say; no metrics
 * or logs are sent. Returns the shutdown, which exports what is still buffered.
 */
export function startTracingSdk(serviceName: string, disabled: readonly Instrumentation[] = []): TracingSdk {
  // Built only when wanted: an instrumentation patches its module as soon as it is constructed.
  const wanted = (name: Instrumentation) => !disabled.includes(name);
  const sdk = new NodeSDK({
    serviceName,
    traceExporter: new CardNumberMasking(new OTLPTraceExporter()),
    // Traces only: left unset, the SDK would also push metrics and logs to the collector.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      wanted('http') && new HttpInstrumentation({
        // Probes answered many times a minute, with nothing to follow.
        ignoreIncomingRequestHook: (req) => PROBES.has((req.url ?? '').split('?')[0]),
        // Outgoing calls (webhook deliveries, mail, gateways) are traced inside a traced
        // request only, not as traces of their own from the workers.
        requireParentforOutgoingSpans: true,
        applyCustomAttributesOnSpan: (span, _request, response) => {
          // The server span (a ServerResponse; a client span's response is an IncomingMessage):
          // the request id the service gave the request, as its X-Request-Id says.
          if (!('getHeader' in response)) return;
          const requestId = response.getHeader('x-request-id');
          if (typeof requestId === 'string') span.setAttribute(REQUEST_ID_ATTRIBUTE, requestId);
        },
      }),
      wanted('koa') && new KoaInstrumentation({
        // One span per matched route; the app's middleware (a dozen layers, each wrapping the
        // next) would add as many spans to every request, saying little.
        ignoreLayersType: [KoaLayerType.MIDDLEWARE],
        requestHook: (span, { context, layerType }) => {
          if (layerType === KoaLayerType.ROUTER) nameRouteSpan(span, context as RoutedContext);
        },
      }),
      // Statements are traced inside a traced request only: the workers' polling would
      // otherwise make a trace of every poll.
      wanted('pg') && new PgInstrumentation({
        requireParentSpan: true,
        // A connection taken from the pool is not a database write: a span each (Sequelize takes
        // one per statement) doubled what a payment's trace sent, and its cost.
        ignoreConnectSpans: true,
        // Bound values are never recorded; the text of a statement Sequelize wrote with its
        // values inlined (a customer's e-mail, a name) is recorded without its string literals.
        requestHook: (span, { query }) => {
          if (query.text.includes("'")) span.setAttribute('db.query.text', query.text.replace(STRING_LITERAL, "'?'"));
        },
      }),
      // Parse, validate and execute; not a span per resolved field (a list of payments would
      // make thousands).
      wanted('graphql') && new GraphQLInstrumentation({ ignoreResolveSpans: true }),
    ].filter((instrumentation) => instrumentation !== false),
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown(), nameRoute };
}

export interface TracingSdk {
  shutdown(): Promise<void>;
  /** Names the HTTP server span of the request being served by its route template (see nameRoute). */
  nameRoute(route: string): void;
}

/**
 * Gives the traced HTTP request being served its route template: the HTTP instrumentation puts
 * it on the server span as `http.route` and names the span `METHOD route` when the response
 * ends. Set by the service's own middleware (src/http/metrics.ts), so that it holds with the Koa
 * instrumentation left out too.
 */
function nameRoute(route: string): void {
  const rpc = core.getRPCMetadata(api.context.active());
  if (rpc?.type === core.RPCType.HTTP) rpc.route = route;
}

const PROBES = new Set(['/health', '/ready']);

/** An SQL string literal ('it''s' included; the E of E'…' stays outside). */
const STRING_LITERAL = /'(?:[^']|'')*'/g;

/** What @koa/router and the REST transport leave on the context (rest/app.ts). */
interface RoutedContext {
  path: string;
  /** The path the router matched, without its /v1 or /api/v1 prefix. */
  newRouterPath?: string;
  /** The route template that matched: `/payments/:id`. */
  _matchedRoute?: string | RegExp;
}

/**
 * The route template with the API prefix the request used (`/v1/payments/:id`), on the route's
 * span: the routers see paths without their prefix.
 */
function nameRouteSpan(span: api.Span, ctx: RoutedContext): void {
  const inner = ctx.newRouterPath;
  if (ctx._matchedRoute === undefined || inner === undefined || !ctx.path.endsWith(inner)) return;
  const route = `${ctx.path.slice(0, ctx.path.length - inner.length)}${String(ctx._matchedRoute)}`;
  span.setAttribute('http.route', route);
  span.updateName(`router - ${route}`);
}

/**
 * The last line of defence, as the logs have one: a card number in any exported text (a URL a
 * client pasted one into, an error message quoting input) is masked before it leaves. Card
 * numbers are never put on a span; this runs on the exporter's batches, off the requests' path.
 */
class CardNumberMasking implements SpanExporter {
  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    for (const span of spans) {
      maskAttributes(span.attributes);
      for (const event of span.events) if (event.attributes) maskAttributes(event.attributes);
      if (span.status.message) (span.status as { message?: string }).message = redactPan(span.status.message);
    }
    this.inner.export(spans, done);
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

function maskAttributes(attributes: api.Attributes): void {
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'string') {
      const masked = redactPan(value);
      if (masked !== value) attributes[name] = masked;
    } else if (Array.isArray(value) && value.some((v) => typeof v === 'string')) {
      attributes[name] = (value as unknown[]).map((v) => (typeof v === 'string' ? redactPan(v) : v)) as api.AttributeValue;
    }
  }
}
