import { createLoaders } from '../../schema/loaders';
import type { Services } from '../../src/services';
import type { RequestContext } from '../../src/core/context';

const rc = { accountId: 'acct_1', mode: 'test', permissions: ['*'], requestId: 'r', clock: { now: () => new Date() } } as RequestContext;

function fakeServices(calls: string[][]): Services {
  return {
    customers: {
      findMany: async (_: unknown, ids: readonly string[]) => {
        calls.push([...ids]);
        return new Map(ids.map((id) => [id, { id }]));
      },
    },
  } as unknown as Services;
}

describe('DataLoaders', () => {
  it('should batch and cache within one request', async () => {
    const calls: string[][] = [];
    const loaders = createLoaders(fakeServices(calls), rc);
    await Promise.all([loaders.customer.load('cus_a'), loaders.customer.load('cus_b')]);
    await loaders.customer.load('cus_a');
    expect(calls).toEqual([['cus_a', 'cus_b']]);
  });

  it('should batch but not cache for long-lived subscriptions', async () => {
    const calls: string[][] = [];
    const loaders = createLoaders(fakeServices(calls), rc, { cache: false });
    await Promise.all([loaders.customer.load('cus_a'), loaders.customer.load('cus_b')]);
    await loaders.customer.load('cus_a');
    expect(calls).toEqual([['cus_a', 'cus_b'], ['cus_a']]);
  });
});
