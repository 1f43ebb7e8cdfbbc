import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { API_ROUTES, apiDocument, apiDocumentText } from '../../rest/routes';
import { errorCodesOf, statusOf } from '../../rest/openapi';
import { exampleProblems } from '../helpers/openapi-examples';
import { CLIENT_TYPES_FILE, generateClientTypes } from '../../scripts/client-types';

type Json = Record<string, any>;
const root = path.join(__dirname, '..', '..');
const operation = (method: string, p: string): Json => (apiDocument() as Json).paths[p][method.toLowerCase()];
/** A response as the document gives it, its shared answer's reference followed (a description beside it wins). */
const answerOf = (answer: Json): Json => {
  if (!answer.$ref) return answer;
  const shared = (apiDocument() as Json).components.responses[answer.$ref.replace('#/components/responses/', '')];
  return { ...shared, ...(answer.description ? { description: answer.description } : {}) };
};

describe('docs/openapi.json', () => {
  it('should match the document generated from the route table (run npm run openapi:print)', () => {
    const committed = fs.readFileSync(path.join(root, 'docs', 'openapi.json'), 'utf8');
    expect(committed).toBe(apiDocumentText());
  });

  it("should be what the typed client's types were generated from (examples/payorch-api.d.ts; run npm run openapi:print)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-client-types-'));
    try {
      generateClientTypes(path.join(dir, 'payorch-api.d.ts'));
      const fresh = fs.readFileSync(path.join(dir, 'payorch-api.d.ts'), 'utf8');
      expect(fresh).toContain('"/customers": {');
      expect(fs.readFileSync(CLIENT_TYPES_FILE, 'utf8')).toBe(fresh);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('should pass the Redocly linter (recommended rules) without an error', () => {
    const run = spawnSync(process.execPath, [path.join(root, 'scripts', 'lint-openapi.mjs'), path.join(root, 'docs', 'openapi.json')], { encoding: 'utf8', cwd: root });
    expect(run.stderr).toBe('');
    const problems = JSON.parse(run.stdout) as Array<{ severity: string }>;
    expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
  });
});

describe('the OpenAPI document of the route table', () => {
  it('should give every operation an example its request schema accepts, and a curl sample', () => {
    for (const r of API_ROUTES) {
      const op = operation(r.method, r.path);
      expect([r.operationId, op['x-codeSamples']?.[0]?.source]).toEqual([r.operationId, expect.stringContaining(`curl -X ${r.method}`)]);
      if (!r.body) continue;
      expect([r.operationId, r.example !== undefined]).toEqual([r.operationId, true]);
      const parsed = r.body.safeParse(r.example);
      expect([r.operationId, parsed.success ? null : parsed.error.issues]).toEqual([r.operationId, null]);
      expect(op.requestBody.content['application/json'].example).toEqual(r.example);
    }
  });

  it('should give every operation an example of its success answer, and every example (request, success, error) should pass its own schema (ajv)', () => {
    expect(exampleProblems(apiDocument() as Json)).toEqual([]);
    const doc = apiDocument() as Json;
    for (const r of API_ROUTES) {
      const op = operation(r.method, r.path);
      const success = Object.entries(op.responses as Record<string, Json>).find(([s]) => s.startsWith('2'))![1];
      const media = Object.values(success.content as Record<string, Json>)[0];
      expect([r.operationId, media.example !== undefined || Object.keys(media.examples ?? {}).length > 0]).toEqual([r.operationId, true]);
    }
    // The create answers show the secret only they carry.
    const created = doc.components.examples[operation('POST', '/api-keys').responses['201'].content['application/json'].examples.CreateApiKeyResponse.$ref.split('/').pop()];
    expect(created.value.data.secret).toMatch(/^sk_test_/);
  });

  it('should find an example its schema refuses, and an operation without an example', () => {
    const wrong = structuredClone(apiDocument()) as Json;
    wrong.components.examples.Customer.value.data.email = 42;
    wrong.paths['/customers'].post.requestBody.content['application/json'].example.locale = 7;
    delete wrong.paths['/payments'].get.responses['200'].content['application/json'].examples;
    wrong.components.responses.NotFound.content['application/json'].examples.resource_not_found.value.error.code = 'no_such_code';
    const problems = exampleProblems(wrong);
    expect(problems).toEqual(expect.arrayContaining([
      expect.stringMatching(/^GET \/customers\/\{id\} 200 application\/json: example Customer does not match its schema: .*email/),
      expect.stringMatching(/^POST \/customers request application\/json: example example does not match its schema: .*locale/),
      'GET /payments: no example of its 200 answer (application/json)',
      expect.stringMatching(/^GET \/customers\/\{id\} 404 application\/json: example resource_not_found does not match its schema/),
    ]));
  });

  it('should ask the Bearer key on every route but the public ones', () => {
    const doc = apiDocument() as Json;
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    for (const r of API_ROUTES) {
      const op = operation(r.method, r.path);
      expect([r.operationId, op.security]).toEqual([r.operationId, r.public ? [] : undefined]);
      expect([r.operationId, Object.keys(op.responses)]).toEqual([r.operationId, r.public ? expect.not.arrayContaining(['401']) : expect.arrayContaining(['401', '403'])]);
    }
  });

  it('should document the Idempotency-Key header exactly on the idempotent routes, and the rate-limit headers on every answer', () => {
    for (const r of API_ROUTES) {
      const op = operation(r.method, r.path);
      const takesKey = (op.parameters ?? []).some((p: Json) => p.$ref === '#/components/parameters/IdempotencyKey');
      expect([r.operationId, takesKey]).toEqual([r.operationId, Boolean(r.idempotent)]);
      for (const [status, answer] of Object.entries(op.responses as Record<string, Json>)) {
        expect([r.operationId, status, Object.keys(answerOf(answer).headers)]).toEqual([r.operationId, status, expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'])]);
      }
    }
  });

  it("should list every error code of a route under its status, the route's own codes included", () => {
    for (const r of API_ROUTES) {
      const op = operation(r.method, r.path);
      const codes = errorCodesOf(r);
      expect(r.errors.every((c) => codes.includes(c))).toBe(true);
      expect([r.operationId, op['x-error-codes']]).toEqual([r.operationId, [...codes].sort()]);
      for (const code of codes) {
        const answer = answerOf(op.responses[String(statusOf(code))] ?? {});
        expect([r.operationId, code, answer.content?.['application/json'].schema.allOf[1].properties.error.properties.code.enum])
          .toEqual([r.operationId, code, expect.arrayContaining([code])]);
        expect([r.operationId, code, answer.description]).toEqual([r.operationId, code, expect.stringContaining(`\`${code}\``)]);
      }
      // A status's description names no code the route cannot answer.
      for (const [status, answer] of Object.entries(op.responses as Record<string, Json>)) {
        if (Number(status) < 400) continue;
        const named = [...answerOf(answer).description.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).filter((c) => c !== 'error');
        expect([r.operationId, status, named.filter((c) => !codes.includes(c as never))]).toEqual([r.operationId, status, []]);
      }
    }
  });

  it('should share each error answer and its headers once (components/responses), not repeat them per operation', () => {
    const doc = apiDocument() as Json;
    expect(Object.keys(doc.components.responses)).toEqual(expect.arrayContaining(['BadRequest', 'Unauthorized', 'Forbidden', 'NotFound', 'Conflict', 'TooManyRequests', 'InternalError', 'ServiceUnavailable']));
    for (const r of API_ROUTES) {
      for (const [status, answer] of Object.entries(operation(r.method, r.path).responses as Record<string, Json>)) {
        if (Number(status) >= 400) expect([r.operationId, status, Object.keys(answer).filter((k) => k !== 'description')]).toEqual([r.operationId, status, ['$ref']]);
      }
    }
    expect(doc.components.responses.TooManyRequests.headers['Retry-After']).toEqual({ $ref: '#/components/headers/Retry-After' });
    // The error envelope is one schema, referenced.
    expect(doc.components.responses.NotFound.content['application/json'].schema.allOf[0]).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
  });

  it('should describe list answers with their meta and a page of the response objects', () => {
    expect(operation('GET', '/customers').responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CustomerList' });
    const list = (apiDocument() as Json).components.schemas.CustomerList;
    expect(list).toMatchObject({ required: ['data', 'meta', 'error'], properties: { data: { type: 'array', items: { $ref: '#/components/schemas/Customer' } }, meta: { $ref: '#/components/schemas/ListMeta' } } });
    expect(operation('GET', '/customers').parameters.map((p: Json) => p.name)).toEqual(expect.arrayContaining(['page', 'pageSize', 'sortField', 'sortDirection', 'search', 'email']));
  });
});
