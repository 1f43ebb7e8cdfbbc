import { startTestApp, type TestApp } from '../helpers/app';
import { connect, closed, run, wsClient } from '../helpers/graphql-ws';

/**
 * GraphQL counts against the same budgets as REST: the account's in the key's mode, shared by
 * that mode's keys. Test-mode traffic, over HTTP or over graphql-ws, leaves live mode's untouched.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const COUNT = '{ customers { total } }';
const gql = (key: string, query: string) => app.request('POST', '/graphql', { key, body: { query } });

/** A restricted test key, made outside any request so that nothing is counted for it. */
async function restrictedTestKey(accountId: string): Promise<string> {
  return (await app.server.services.accounts.createKeyForAccount(accountId, 'test', ['customers:read'])).secret!;
}

describe('GraphQL: one rate budget per account and mode', () => {
  it('should keep the live budget whole over HTTP when a restricted test key has spent the test budget', async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 3 });
    const restricted = await restrictedTestKey(account.accountId);
    for (let i = 0; i < 3; i++) expect((await gql(restricted, COUNT)).status).toBe(200);
    const spent = await gql(restricted, COUNT);
    expect(spent.status).toBe(429);
    expect(spent.body.errors[0].extensions.code).toBe('rate_limited');

    const live = await gql(account.liveKey, COUNT);
    expect(live.status).toBe(200);
    expect(live.body.data).toEqual({ customers: { total: 0 } });
    expect(live.headers['ratelimit-limit']).toBe('3');
    expect(live.headers['ratelimit-remaining']).toBe('2');
    // The test mode's other key shares the spent budget.
    const other = await gql(account.testKey, COUNT);
    expect(other.status).toBe(429);
    expect(other.body.errors[0].extensions.code).toBe('rate_limited');
  });

  it('should keep the live budget whole over graphql-ws when a restricted test key has spent the test budget', async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 4 });
    const restricted = wsClient(app, await restrictedTestKey(account.accountId));
    // The socket's connect is one request, each operation another.
    for (let i = 0; i < 3; i++) expect((await run(restricted, COUNT)).data).toEqual({ customers: { total: 0 } });
    expect((await run(restricted, COUNT)).errors?.[0].extensions.code).toBe('rate_limited');

    const live = wsClient(app, account.liveKey);
    expect((await run(live, COUNT)).data).toEqual({ customers: { total: 0 } }); // connect + one operation
    const http = await gql(account.liveKey, COUNT);
    expect(http.status).toBe(200);
    expect(http.headers['ratelimit-remaining']).toBe('1');
    // The test mode's other key cannot even connect: its budget is spent.
    const refused = await connect(app, account.testKey);
    expect(refused.outcome).toEqual({ code: 4429, reason: expect.stringMatching(/^Too many requests; retry in [1-9][0-9]* s$/) });
    await closed(refused.socket);
    await restricted.dispose();
    await live.dispose();
  });
});
