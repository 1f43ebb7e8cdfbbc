import { DomainError } from '../../src/core/errors';
import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

describe('GraphQL Idempotency-Key and a database outage', () => {
  it('should free the key when the mutation failed with service_unavailable, so a retry runs it', async () => {
    const mutation = 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id email } }';
    const send = () => app.request('POST', '/graphql', {
      key: app.account.testKey, headers: { 'idempotency-key': 'gql-outage-retry' },
      body: { query: mutation, variables: { input: { email: 'retry@example.com' } } },
    });
    const { customers } = app.server.services;
    const create = customers.create;
    // The key is claimed, then the database goes away under the mutation (as src/db reports it).
    customers.create = async () => {
      throw new DomainError('service_unavailable', 'The database is unavailable; try again shortly');
    };
    try {
      const failed = await send();
      expect(failed.body.errors[0].extensions.code).toBe('service_unavailable');
    } finally {
      customers.create = create;
    }
    const retried = await send();
    expect(retried.body.errors).toBeUndefined();
    expect(retried.body.data.createCustomer.email).toBe('retry@example.com');
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
  });
});
