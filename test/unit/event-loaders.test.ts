import { EventLoaders } from '../../schema/loaders';
import type { Services } from '../../src/services';
import type { RequestContext } from '../../src/core/context';
import { waitFor } from '../helpers/wait';

/** The loaders subscription events share: one set per account, mode, permissions and event, dropped after its last use. */

const rc = (accountId: string, mode: 'test' | 'live' = 'test', permissions = ['*']) =>
  ({ accountId, mode, permissions, requestId: `req_${accountId}`, clock: { now: () => new Date() } }) as RequestContext;

function fakeServices(calls: Array<{ accountId: string; permissions: string[]; ids: string[] }>): Services {
  return {
    customers: {
      findMany: async (ctx: RequestContext, ids: readonly string[]) => {
        calls.push({ accountId: ctx.accountId, permissions: ctx.permissions, ids: [...ids] });
        return new Map(ids.map((id) => [id, { id, accountId: ctx.accountId }]));
      },
    },
  } as unknown as Services;
}

describe('EventLoaders', () => {
  it('should give the subscribers of one account, mode and permissions one set per event, read once for all of them', async () => {
    const calls: Array<{ accountId: string; permissions: string[]; ids: string[] }> = [];
    const shared = new EventLoaders(fakeServices(calls), 10);
    const subscribers = Array.from({ length: 50 }, () => shared.acquire(rc('acct_a', 'test', ['customers:read', 'payments:read']), 'evt_1'));
    expect(new Set(subscribers.map((s) => s.loaders)).size).toBe(1);
    await Promise.all(subscribers.map((s) => s.loaders.customer.load('cus_1')));
    expect(calls).toEqual([{ accountId: 'acct_a', permissions: ['customers:read', 'payments:read'], ids: ['cus_1'] }]);
    // The same permissions in another order are the same group.
    expect(shared.acquire(rc('acct_a', 'test', ['payments:read', 'customers:read']), 'evt_1').loaders).toBe(subscribers[0].loaders);
  });

  it('should never share a set across accounts, modes, permissions or events', () => {
    const shared = new EventLoaders(fakeServices([]), 10);
    const sets = [
      shared.acquire(rc('acct_a'), 'evt_1'), shared.acquire(rc('acct_b'), 'evt_1'), shared.acquire(rc('acct_a', 'live'), 'evt_1'),
      shared.acquire(rc('acct_a', 'test', ['customers:read']), 'evt_1'), shared.acquire(rc('acct_a'), 'evt_2'),
    ];
    expect(new Set(sets.map((s) => s.loaders)).size).toBe(5);
    expect(shared.size).toBe(5);
  });

  it('should drop a set once its last subscriber released it and the linger passed, not before', async () => {
    const shared = new EventLoaders(fakeServices([]), 20);
    const first = shared.acquire(rc('acct_a'), 'evt_1');
    const second = shared.acquire(rc('acct_a'), 'evt_1');
    first.release();
    first.release(); // once only
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(shared.size).toBe(1);
    second.release();
    // A subscriber running it late, within the linger, still finds it.
    const late = shared.acquire(rc('acct_a'), 'evt_1');
    expect(late.loaders).toBe(first.loaders);
    late.release();
    await waitFor(() => shared.size === 0, { what: 'the set to be dropped' });
  });
});
