import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ serviceOptions: { exports: { pageSize: 3 } } });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const gql = (query: string, variables?: Record<string, unknown>, k = key) => app.request('POST', '/graphql', { key: k, body: { query, variables } });
const FIELDS = 'id object resource format filters status rowCount progress url failureMessage expiresAt completedAt';

describe(`exports over GraphQL (${DIALECT})`, () => {
  it('should create an export as REST does, list it, and show it complete with its file downloadable over REST', async () => {
    for (let i = 0; i < 7; i++) {
      expect((await app.request('POST', '/v1/customers', { key, body: { email: `gql-export-${i}@example.com` } })).status).toBe(201);
    }
    const created = await gql(`mutation($i: CreateExportInput!) { createExport(input: $i) { ${FIELDS} } }`, {
      i: { resource: 'customers', format: 'jsonl', filters: { search: 'gql-export' } },
    });
    expect(created.body.errors).toBeUndefined();
    const made = created.body.data.createExport;
    expect(made).toMatchObject({ object: 'export', resource: 'customers', format: 'jsonl', filters: { search: 'gql-export' }, status: 'queued', rowCount: 0, progress: 0, url: null });

    await app.server.services.exports.runDue(new Date());
    const read = await gql(`query($id: ID!) { export(id: $id) { ${FIELDS} } }`, { id: made.id });
    expect(read.body.data.export).toMatchObject({ status: 'complete', rowCount: 7, progress: 1 });
    const rest = await app.request('GET', `/v1/exports/${made.id}`, { key });
    expect(read.body.data.export).toEqual(Object.fromEntries(FIELDS.split(' ').map((f) => [f, rest.body.data[f]])));
    const file = await app.request('GET', `/v1/exports/${made.id}/file`, { key });
    const listed = await app.request('GET', '/v1/customers?search=gql-export&pageSize=100', { key });
    expect(file.text.trimEnd().split('\n').map((l) => JSON.parse(l))).toEqual(listed.body.data);

    const list = await gql('{ exports(resource: customers, status: complete) { total nodes { id status } } }');
    expect(list.body.data.exports).toEqual({ total: 1, nodes: [{ id: made.id, status: 'complete' }] });
  });

  it('should refuse a bad filter with its param, and a key without the resource\'s read permission', async () => {
    const bad = await gql('mutation { createExport(input: { resource: payments, format: csv, filters: { status: "lost" } }) { id } }');
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'filters.status' });
    const paging = await gql('mutation { createExport(input: { resource: payments, format: csv, filters: { pageSize: 5 } }) { id } }');
    expect(paging.body.errors[0].extensions).toMatchObject({ code: 'unknown_parameter', param: 'filters.pageSize' });
    const reader = (await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['exports:write'] } })).body.data.secret;
    const denied = await gql('mutation { createExport(input: { resource: invoices, format: csv }) { id } }', undefined, reader);
    expect(denied.body.errors[0].extensions).toMatchObject({ code: 'permission_denied' });
    expect(denied.body.errors[0].message).toContain("'invoices:read'");
    const missing = await gql('{ export(id: "exp_nope") { id } }');
    expect(missing.body.errors[0].extensions.code).toBe('resource_not_found');
  });
});
