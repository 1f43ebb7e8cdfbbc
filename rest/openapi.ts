import { z } from 'zod';
import { DomainError, type ErrorCode } from '../src/core/errors';
import { IDEMPOTENT_OPERATIONS } from '../src/core/idempotent-operations';
import { PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX } from '../src/core/pagination';
import { responseExampleOf } from './response-examples';
import { pathParams, successStatus, type RouteSpec } from './route-table';

type Json = Record<string, unknown>;

/** The codes every route of its kind can answer, besides the operation's own (RouteSpec.errors). */
export function errorCodesOf(r: RouteSpec): ErrorCode[] {
  const codes = new Set<ErrorCode>();
  // Unknown query parameters, a NUL in the path or query.
  codes.add('unknown_parameter').add('invalid_parameter');
  if (!r.public) codes.add('missing_api_key').add('invalid_api_key').add('permission_denied');
  if (r.method !== 'GET') codes.add('malformed_json').add('payload_too_large').add('unsupported_media_type');
  if (r.body) codes.add('missing_parameter');
  if (pathParams(r.path).length > 0) codes.add('resource_not_found');
  if (r.idempotent) codes.add('idempotency_key_reused').add('idempotency_key_in_use');
  codes.add('rate_limited').add('internal_error').add('service_unavailable');
  for (const code of r.errors) codes.add(code);
  return [...codes];
}

/** Each code's HTTP status, as DomainError gives it. */
export function statusOf(code: ErrorCode): number {
  return new DomainError(code, '').status;
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const idOf = (schema: z.ZodType): string | undefined => (schema.meta() as { id?: string } | undefined)?.id;
const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** JSON Schema of zod schemas for the document: no `$schema`/`$id` per component, no regex for date-time. */
function cleanSchema(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}
const override = (ctx: { jsonSchema: Json }) => {
  // The format says it; the regex zod adds beside it is long and says no more.
  if (ctx.jsonSchema.format === 'date-time') delete ctx.jsonSchema.pattern;
};

const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
};

/** The shared answer of each error status (components/responses): its name and what it means. */
const ERROR_RESPONSES: Record<number, { name: string; description: string }> = {
  400: { name: 'BadRequest', description: 'The request is invalid: `error.param` names the parameter' },
  401: { name: 'Unauthorized', description: 'No API key, or not a valid one' },
  403: { name: 'Forbidden', description: 'The key lacks the permission, or acts in the other mode' },
  404: { name: 'NotFound', description: 'No such object' },
  409: { name: 'Conflict', description: 'Conflict: an Idempotency-Key reused or in use, a duplicate, or an object busy' },
  410: { name: 'Gone', description: 'Gone: the payment link is no longer active, or the export\'s file has expired' },
  413: { name: 'PayloadTooLarge', description: 'The body exceeds 1 MiB' },
  415: { name: 'UnsupportedMediaType', description: 'The body is not JSON' },
  422: { name: 'UnprocessableContent', description: 'The request is understood but cannot be done in the object\'s state' },
  429: { name: 'TooManyRequests', description: 'Rate limited: retry after `Retry-After` seconds' },
  500: { name: 'InternalError', description: 'Internal error: quote the requestId to support' },
  503: { name: 'ServiceUnavailable', description: 'Unavailable (database or gateway): try again; an Idempotency-Key is freed' },
};

/** An error answer's description: what its status means, and the codes it answers. */
const describeError = (status: number, codes: readonly ErrorCode[]): string =>
  `${ERROR_RESPONSES[status].description}: ${codes.map((c) => `\`${c}\``).join(', ')}`;

/**
 * An example error of each code the REST routes answer (the shared answers show one per code).
 * Each quotes a message the service sends (src/http, src/core, the services), with
 * example values where the message has any.
 */
const ERROR_EXAMPLES: Partial<Record<ErrorCode, { message: string; param?: string }>> = {
  malformed_json: { message: 'Request body is not valid JSON' },
  invalid_parameter: { message: "Invalid 'email': must be an e-mail address", param: 'email' },
  missing_parameter: { message: "Missing required parameter: 'amount'", param: 'amount' },
  unknown_parameter: { message: "Unknown parameter: 'colour'", param: 'colour' },
  missing_api_key: { message: 'No API key provided; send Authorization: Bearer <key>' },
  invalid_api_key: { message: 'Invalid API key provided' },
  permission_denied: { message: "This API key does not have the 'payments:write' permission" },
  mode_mismatch: { message: 'Test clocks exist only in test mode: use a test key (sk_test_…)' },
  resource_not_found: { message: "No such customer: 'cus_nope'", param: 'id' },
  idempotency_key_reused: { message: 'This Idempotency-Key was already used with a different request', param: 'Idempotency-Key' },
  idempotency_key_in_use: { message: 'A request with this Idempotency-Key is still being processed', param: 'Idempotency-Key' },
  duplicate_email: { message: "A customer with the e-mail 'ada@example.com' already exists", param: 'email' },
  gateway_in_use: { message: 'The routing rules still use this gateway; remove it from them first', param: 'id' },
  checkout_session_in_use: { message: 'A payment of this checkout session is already being processed; wait for its result' },
  invoice_payment_in_progress: { message: 'A card payment of this invoice is being processed; wait for its result' },
  payment_in_progress: { message: 'Another capture or cancel of this payment is being processed; try again in a moment' },
  capture_exceeds_authorized: { message: 'At most 2500 can be captured from this authorisation', param: 'amount' },
  capture_failed: { message: 'The authorisation was voided.' },
  payment_link_inactive: { message: 'This payment link is no longer active' },
  export_not_ready: { message: 'This export is running (120 of 540 rows written); its file can be downloaded once it is complete' },
  export_expired: { message: 'This export expired at 2026-03-03T09:14:07.512Z and its file was deleted; create the export again' },
  payload_too_large: { message: 'Request body exceeds 1 MiB' },
  unsupported_media_type: { message: 'Request body must be JSON sent with Content-Type: application/json' },
  payment_not_refundable: { message: 'Only succeeded payments can be refunded; this one is failed', param: 'paymentId' },
  refund_exceeds_remaining: { message: 'At most 2000 (20.00 EUR) can still be refunded', param: 'amount' },
  invalid_state: { message: 'This invoice is paid; only a draft or sent invoice can be voided' },
  proration_unavailable: { message: 'The new price is in USD but the subscription bills in EUR; a currency change cannot be prorated: cancel and create a new subscription', param: 'priceId' },
  no_gateway_available: { message: 'No enabled gateway can take a EUR payment for this account' },
  fx_rate_unavailable: { message: 'No exchange rate from USD to EUR; set one with PUT /v1/fx-rates', param: 'originalCurrency' },
  card_declined: { message: 'The card could not be saved: declined (insufficient_funds)', param: 'card' },
  limit_exceeded: { message: 'At most 16 webhook endpoints per account and mode; delete one first' },
  rate_limited: { message: 'Too many requests; retry in 12 s' },
  too_many_attempts: { message: 'Too many failed payment attempts from your connection; try again in 42 minutes' },
  invalid_proration_date: { message: 'prorationDate must not be before the prorationDate of an earlier change in this period (2027-04-20T00:00:00.000Z)', param: 'prorationDate' },
  insufficient_credit: { message: "The customer's credit balance in EUR is 500 (5.00 EUR): a debit of 700 would take it below 0", param: 'amount' },
  customer_exists: { message: 'This e-mail address belongs to an existing customer of the merchant: ask the merchant for a link to your account', param: 'email' },
  internal_error: { message: 'An internal error occurred; quote the requestId to support' },
  service_unavailable: { message: 'The database is unavailable; try again shortly' },
  gateway_unavailable: { message: "Gateway 'gw_4f9Kq2mB8xZt1n' could not save the card just now; try again" },
};

/** The shared error answers: the envelope, the status's codes, an example of each. */
function errorResponses(codesAt: Record<number, Set<ErrorCode>>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [s, set] of Object.entries(codesAt).sort((a, b) => Number(a[0]) - Number(b[0]))) {
    const codes = [...set].sort();
    const headers: Json = { ...RATE_LIMIT_HEADERS };
    if (Number(s) === 429) headers['Retry-After'] = { $ref: '#/components/headers/Retry-After' };
    const examples: Record<string, Json> = {};
    for (const code of codes) {
      const ex = ERROR_EXAMPLES[code];
      if (!ex) throw new Error(`error code ${code} has no example (ERROR_EXAMPLES)`);
      examples[code] = { value: { data: null, error: { code, message: ex.message, ...(ex.param ? { param: ex.param } : {}), requestId: 'req_4Tn8Kx2Qm7Lz9Wb3' } } };
    }
    out[ERROR_RESPONSES[Number(s)].name] = {
      description: describeError(Number(s), codes),
      headers,
      content: { 'application/json': {
        schema: { allOf: [ref('ErrorEnvelope'), { properties: { error: { properties: { code: { enum: codes } } } } }] },
        examples,
      } },
    };
  }
  return out;
}

function curlSample(r: RouteSpec): string {
  const path = r.path.replace(/\{(\w+)\}/g, (_m, name: string) => `{${name}}`);
  const lines = [`curl -X ${r.method} https://payorch.example.com/v1${path}`];
  if (!r.public) lines.push(`  -H "Authorization: Bearer $PAYORCH_KEY"`);
  if (r.idempotent) lines.push(`  -H "Idempotency-Key: $(uuidgen)"`);
  if (r.example) lines.push(`  -H "Content-Type: application/json"`, `  -d '${JSON.stringify(r.example)}'`);
  return lines.join(' \\\n');
}

const TAG_DESCRIPTIONS: Record<string, string> = {
  Customers: 'The people and companies you charge',
  Products: 'What you sell',
  Prices: 'How much a product costs, once or recurring',
  Events: 'Everything that happened, as webhooks deliver it',
  'API keys': 'Keys for this account, test or live, with permissions',
  Account: "The account's own settings",
  Payments: 'Card payments, routed across the configured gateways',
  Refunds: 'Money given back on a payment',
  'Payment methods': "Customers' saved cards",
  Gateways: 'The payment gateways payments are routed to',
  Routing: 'Rules choosing the gateways of a payment',
  'FX rates': 'Exchange rates for payments in another currency',
  Webhooks: 'Endpoints that receive events, and their delivery log',
  'Checkout sessions': 'Hosted payment pages for one payment, a saved card or a subscription',
  'Payment links': 'Reusable hosted pages for a fixed amount',
  Invoices: 'Invoices sent to customers and paid by card or outside Payorch',
  'Tax rates': 'Taxes invoices add on top of their lines or hold inside them',
  Subscriptions: 'Recurring billing with prorations and dunning',
  'Test clocks': 'Simulated time for subscriptions in test mode',
  Exports: 'Lists written to CSV or JSON Lines files in the background, kept 24 hours',
  Public: 'What the hosted pages call: no API key',
  Reference: 'This document',
};

export interface OpenApiOptions {
  version: string;
}

/** The OpenAPI 3.1 document of the REST API, generated from the route table alone. */
export function openApiDocument(table: readonly RouteSpec[], options: OpenApiOptions): Json {
  // Response objects (`.meta({ id })` on each) become components, referenced where used.
  const responses = z.registry<{ id: string }>();
  const requests = z.registry<{ id: string }>();
  const requestIds = new Map<z.ZodType, string>();
  for (const r of table) {
    if ((r.kind === 'one' || r.kind === 'list') && !responses.has(r.response)) {
      const id = idOf(r.response);
      if (!id) throw new Error(`${r.operationId}: its response schema needs .meta({ id })`);
      responses.add(r.response, { id });
    }
    if (r.body && !requestIds.has(r.body)) {
      requestIds.set(r.body, `${pascal(r.operationId)}Request`);
      requests.add(r.body, { id: `${pascal(r.operationId)}Request` });
    }
  }
  const params = { uri: (id: string) => `#/components/schemas/${id}`, unrepresentable: 'any' as const, override, cycles: 'ref' as const };
  const outSchemas = z.toJSONSchema(responses, { ...params, io: 'output' }).schemas as Record<string, Json>;
  const inSchemas = z.toJSONSchema(requests, { ...params, io: 'input' }).schemas as Record<string, Json>;
  if ('__shared' in outSchemas || '__shared' in inSchemas) {
    throw new Error('a schema nested in a response or body carries an id of its own: give ids to top-level response schemas only');
  }
  const schemas: Record<string, Json> = {};
  for (const [id, s] of Object.entries({ ...outSchemas, ...inSchemas })) schemas[id] = cleanSchema(s);

  schemas.Error = {
    type: 'object',
    description: 'What went wrong: a stable `code` to act on, a message for people, the parameter at fault.',
    required: ['code', 'message', 'requestId'],
    additionalProperties: false,
    properties: {
      code: { type: 'string' },
      message: { type: 'string' },
      param: { type: 'string', description: 'The parameter at fault (a body field as a dotted path, a query parameter or a header).' },
      requestId: { type: 'string', description: 'Also sent as the X-Request-Id header.' },
    },
  };
  schemas.ErrorEnvelope = {
    type: 'object',
    required: ['data', 'error'],
    additionalProperties: false,
    properties: { data: { type: 'null' }, error: ref('Error') },
  };
  schemas.ListMeta = {
    type: 'object',
    required: ['total', 'page', 'pageSize', 'hasMore'],
    additionalProperties: false,
    properties: {
      total: { type: 'integer', minimum: 0, description: 'How many objects the list holds with its filters (cursors aside).' },
      page: { type: ['integer', 'null'], minimum: 1, description: 'The page number; null when the page was read with startingAfter or endingBefore.' },
      pageSize: { type: 'integer', minimum: 1, maximum: PAGE_SIZE_MAX, default: PAGE_SIZE_DEFAULT },
      hasMore: { type: 'boolean', description: 'Whether more objects follow this page in the direction it was read (before it, with endingBefore).' },
    },
  };

  // Success examples: each response object's once (components/examples), as `one` and `list`
  // routes answer it; a route whose answer differs (a create's secret) has one of its own.
  const examples: Record<string, Json> = {};
  const successExample = (r: RouteSpec): Json => {
    if (r.kind === 'file') return { example: r.fileExample ?? '%PDF-1.7 … (the invoice as a PDF file)' };
    if (r.kind === 'document') {
      return { example: { openapi: '3.1.0', info: { title: 'Payorch API', version: options.version }, paths: { '/customers': { post: { operationId: 'createCustomer' } } } } };
    }
    const id = idOf(r.response) as string;
    let name = r.kind === 'list' ? `${id}List` : id;
    let data = r.responseExample ?? responseExampleOf(r.response);
    if (data === undefined) throw new Error(`${r.operationId}: its response schema ${id} has no example (rest/response-examples.ts)`);
    if (r.responseExample !== undefined) name = `${pascal(r.operationId)}Response`;
    if (!examples[name]) {
      examples[name] = r.kind === 'list'
        ? { summary: `A page of ${id} objects`, value: { data: [data], meta: { total: 1, page: 1, pageSize: PAGE_SIZE_DEFAULT, hasMore: false }, error: null } }
        : { summary: r.responseExample !== undefined ? `${id} (${r.summary})` : id, value: { data, error: null } };
    }
    return { examples: { [name]: { $ref: `#/components/examples/${name}` } } };
  };

  // The success envelopes, once per response object: `{data, error: null}` and, for lists, a page.
  const envelopeOf = (r: RouteSpec & { kind: 'one' | 'list' }): string => {
    const id = idOf(r.response) as string;
    const name = r.kind === 'list' ? `${id}List` : `${id}Response`;
    if (schemas[name] && !envelopes.has(name)) throw new Error(`schema ${name} is both an envelope and a request or response object`);
    envelopes.add(name);
    schemas[name] ??= r.kind === 'list'
      ? {
        type: 'object', description: `A page of ${id} objects`, required: ['data', 'meta', 'error'], additionalProperties: false,
        properties: { data: { type: 'array', items: ref(id) }, meta: ref('ListMeta'), error: { type: 'null' } },
      }
      : {
        type: 'object', description: `One ${id} in the success envelope`, required: ['data', 'error'], additionalProperties: false,
        properties: { data: ref(id), error: { type: 'null' } },
      };
    return name;
  };
  const envelopes = new Set<string>();

  const paths: Record<string, Record<string, Json>> = {};
  // Each operation's error answers with their codes, for the shared answers' codes below.
  const errorAnswers: Array<{ status: number; answer: Json; codes: ErrorCode[] }> = [];
  const tags = new Set<string>();
  for (const r of table) {
    tags.add(r.tag);
    const operation: Json = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: [r.tag],
    };
    if (r.public) operation.security = [];
    if (r.permission) operation['x-permission'] = r.permission;

    const parameters: Json[] = pathParams(r.path).map((name) => ({
      name, in: 'path', required: true, schema: { type: 'string', maxLength: 255 },
    }));
    if (r.kind === 'list' || (r.kind === 'one' && r.query)) {
      const query = cleanSchema(z.toJSONSchema(r.query as z.ZodType, { ...params, io: 'input' }) as Json);
      const required = new Set((query.required as string[] | undefined) ?? []);
      for (const [name, schema] of Object.entries((query.properties ?? {}) as Record<string, Json>)) {
        // An object (the metadata filter) is sent as `name[key]=value`.
        const style = schema.type === 'object' ? { style: 'deepObject', explode: true } : {};
        parameters.push({ name, in: 'query', required: required.has(name), ...style, schema });
      }
    }
    if (r.idempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
    if (parameters.length > 0) operation.parameters = parameters;

    if (r.body) {
      operation.requestBody = {
        required: false,
        content: { 'application/json': { schema: ref(requestIds.get(r.body) as string), ...(r.example ? { example: r.example } : {}) } },
      };
    } else if (r.noBody) {
      operation.description = [r.description, 'Takes no body: any field sent is refused (`unknown_parameter`).'].filter(Boolean).join('\n\n');
    }

    const status = successStatus(r);
    const okHeaders: Json = { ...RATE_LIMIT_HEADERS };
    if (r.idempotent) okHeaders['Idempotent-Replayed'] = { $ref: '#/components/headers/Idempotent-Replayed' };
    const ok: Json = { description: r.idempotent && IDEMPOTENT_OPERATIONS[r.idempotent].status === 201 ? 'Created' : 'OK', headers: okHeaders };
    switch (r.kind) {
      case 'one':
      case 'list':
        ok.content = { 'application/json': { schema: ref(envelopeOf(r)), ...successExample(r) } };
        break;
      case 'file':
        ok.content = Object.fromEntries((typeof r.contentType === 'string' ? [r.contentType] : r.contentType).map((type) => [
          type, { schema: { type: 'string', contentMediaType: type }, ...successExample(r) },
        ]));
        break;
      case 'document':
        ok.content = { 'application/json': { schema: { type: 'object', description: 'An OpenAPI 3.1 document' }, ...successExample(r) } };
        break;
    }
    const answers: Record<string, Json> = { [String(status)]: ok };

    // Errors: the shared answer of each status (components/responses); where this operation
    // answers only some of that status's codes, its description names them. All its codes,
    // machine-readable, in x-error-codes.
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of errorCodesOf(r)) {
      const s = statusOf(code);
      if (!ERROR_RESPONSES[s]) throw new Error(`${r.operationId}: no shared response for status ${s}`);
      byStatus.set(s, [...(byStatus.get(s) ?? []), code]);
    }
    for (const [s, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      answers[String(s)] = { $ref: `#/components/responses/${ERROR_RESPONSES[s].name}` };
      errorAnswers.push({ status: s, answer: answers[String(s)], codes });
    }
    operation['x-error-codes'] = [...byStatus.values()].flat().sort();
    operation.responses = answers;
    operation['x-codeSamples'] = [{ lang: 'Shell', label: 'curl', source: curlSample(r) }];
    (paths[r.path] ??= {})[r.method.toLowerCase()] = operation;
  }

  // Every code each error status answers over all operations: the shared answer's; an operation
  // answering fewer names its own in the description.
  const codesAt: Record<number, Set<ErrorCode>> = {};
  for (const { status, codes } of errorAnswers) for (const code of codes) (codesAt[status] ??= new Set()).add(code);
  for (const { status, answer, codes } of errorAnswers) {
    if (codes.length < codesAt[status].size) answer.description = describeError(status, codes);
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Payorch API',
      version: options.version,
      description: [
        'Payment orchestration: payments routed across gateways, refunds, saved cards, checkout sessions, payment links, invoices, subscriptions and webhooks.',
        '',
        'Every answer is a JSON envelope: `{"data": …, "error": null}` on success (lists add `meta` {total, page, pageSize, hasMore}), `{"data": null, "error": {code, message, param?, requestId}}` on failure. Act on `error.code`; each operation lists the codes it can answer.',
        '',
        'Authenticate with an API key as a Bearer token (`sk_test_…` for test mode, `sk_live_…` for live mode). Routes under `/public` take no key. Send an `Idempotency-Key` on the operations that take one to retry safely.',
      ].join('\n'),
    },
    servers: [{ url: '/v1', description: 'This service (also served under /api/v1)' }],
    security: [{ bearerAuth: [] }],
    tags: [...tags].map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer sk_test_…` (test mode) or `sk_live_…` (live mode).' },
      },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key', in: 'header', required: false,
          description: 'Retry safely: the same key with the same request answers the first answer again (with `Idempotent-Replayed: true`); with a different request, 409 `idempotency_key_reused`.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      },
      headers: {
        'RateLimit-Limit': { description: 'Requests allowed per window', schema: { type: 'integer' } },
        'RateLimit-Remaining': { description: 'Requests left in the window', schema: { type: 'integer' } },
        'RateLimit-Reset': { description: 'Seconds until the window resets', schema: { type: 'integer' } },
        'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
        'X-Request-Id': { description: 'The request id (also `error.requestId`)', schema: { type: 'string' } },
        'Idempotent-Replayed': { description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key', schema: { type: 'string', enum: ['true'] } },
      },
      responses: errorResponses(codesAt),
      examples: Object.fromEntries(Object.entries(examples).sort(([a], [b]) => a.localeCompare(b))),
      schemas,
    },
  };
}
