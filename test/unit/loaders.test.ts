import { clearLoaders, createLoaders } from '../../schema/loaders';
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

  it('should batch a nested list once per limit asked, and forget it on clearLoaders', async () => {
    const calls: Array<[string[], number]> = [];
    const services = {
      payments: {
        forCustomers: async (_: unknown, ids: readonly string[], limit: number) => {
          calls.push([[...ids], limit]);
          return new Map(ids.map((id) => [id, Array.from({ length: limit }, (_x, i) => ({ id: `${id}_${i}` }))]));
        },
      },
    } as unknown as Services;
    const loaders = createLoaders(services, rc);
    const [a2, b2, a5] = await Promise.all([
      loaders.paymentsByCustomer.load('cus_a', 2), loaders.paymentsByCustomer.load('cus_b', 2), loaders.paymentsByCustomer.load('cus_a', 5),
    ]);
    expect([a2.length, b2.length, a5.length]).toEqual([2, 2, 5]);
    expect(calls).toEqual([[['cus_a', 'cus_b'], 2], [['cus_a'], 5]]);
    await loaders.paymentsByCustomer.load('cus_a', 5);
    expect(calls).toHaveLength(2);
    clearLoaders(loaders);
    await loaders.paymentsByCustomer.load('cus_a', 5);
    expect(calls).toHaveLength(3);
  });
});
