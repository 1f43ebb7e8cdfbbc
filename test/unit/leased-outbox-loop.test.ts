import { LeasedOutboxLoop, type LeasedWork } from '../../src/core/leased-outbox-loop';
import { createLogger } from '../../src/logger';
import { waitFor } from '../helpers/wait';

interface Row extends LeasedWork {
  id: number;
}

/** A worker over an endless backlog of one group whose rows finish when the test says. */
function fakeWorker(groupConcurrency: number) {
  const rooms: number[] = [];
  const finishing: Array<() => void> = [];
  let next = 0;
  const worker = {
    claim: async (limit: number, inFlight: ReadonlyMap<string, number>): Promise<Row[]> => {
      const room = Math.min(limit, groupConcurrency - (inFlight.get('g') ?? 0));
      rooms.push(room);
      return Array.from({ length: room }, () => ({ id: next++, lockToken: 'tok' }));
    },
    process: () => new Promise<void>((resolve) => finishing.push(resolve)),
    renewLeases: async () => undefined,
  };
  return { worker, rooms, finishing };
}

describe('the leased-outbox loop', () => {
  it('should refill the slots of rows that finish together with one claim, not one claim each', async () => {
    const { worker, rooms, finishing } = fakeWorker(4);
    const loop = new LeasedOutboxLoop<Row>(worker, createLogger('silent'), {
      pollMs: 60_000,
      concurrency: 64,
      group: { of: () => 'g', concurrency: 4 },
      messages: { claimFailed: 'claim failed', renewFailed: 'renew failed', settleFailed: 'settle failed' },
      describe: (r) => ({ id: r.id }),
    });
    try {
      await waitFor(() => loop.inFlight === 4, { what: 'the first claim' });
      expect(rooms).toEqual([4]);
      // Four rows settled by one batch finish in the same turn of the event loop.
      for (const finish of finishing.splice(0)) finish();
      await waitFor(() => rooms.length === 2 && loop.inFlight === 4, { what: 'the refill' });
      expect(rooms).toEqual([4, 4]);
    } finally {
      const stopping = loop.stop();
      for (const finish of finishing.splice(0)) finish();
      await stopping;
    }
  });
});
