import type { RequestContext } from '../../src/core/context';
import { startServices, type ServiceHarness } from '../helpers/services';

/**
 * A test clock's advance holds the clock for BILLING_LEASE_MS from its last step, not from its
 * start (TestClockService.advance): a long advance that is still stepping is never taken over,
 * however long it has run; one that stopped stepping for longer than the lease is, and then
 * writes nothing more to the clock should it wake up. The billing
 * steps are replaced by a controlled sequence, and time is the harness's fixed clock.
 */
const LEASE_MS = 5 * 60_000;

let h: ServiceHarness;
let ctx: RequestContext;
beforeAll(async () => {
  h = await startServices({ services: { billingLeaseMs: LEASE_MS } });
  ctx = (await h.account()).test;
});
afterAll(() => h?.stop());

/** An advance whose billing takes steps when told, with the clock moved `stepMs` before each. */
function pausedAdvance(clockId: string, to: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => { release = resolve; });
  let stepped!: () => void;
  const steppedTwice = new Promise<void>((resolve) => { stepped = resolve; });
  const spy = jest.spyOn(h.services.billing, 'advanceClock').mockImplementationOnce(async (_id, until, setTime) => {
    for (let i = 1; i <= 2; i++) {
      h.clock.advance(LEASE_MS * 0.8);
      await setTime(new Date(Date.parse('2027-01-01T00:00:00Z') + i * 86_400_000));
    }
    stepped();
    await released;
    await setTime(until);
  });
  const done = h.services.testClocks.advance(ctx, clockId, { frozenTime: to });
  return { steppedTwice, release, done, spy };
}

describe('a test clock advance\'s hold on its clock', () => {
  it('should renew with each step: an advance running longer than the lease is not taken over while it steps', async () => {
    const clock = await h.services.testClocks.create(ctx, { frozenTime: '2027-01-01T00:00:00Z' });
    const first = pausedAdvance(clock.id, '2027-02-01T00:00:00Z');
    await first.steppedTwice;
    // 1.6 leases since the advance began, 0.8 since its last step: still held.
    await expect(h.services.testClocks.advance(ctx, clock.id, { frozenTime: '2027-03-01T00:00:00Z' })).rejects.toMatchObject({ code: 'invalid_state' });
    first.release();
    await expect(first.done).resolves.toMatchObject({ status: 'ready', frozenTime: '2027-02-01T00:00:00.000Z' });
    first.spy.mockRestore();
  });

  it('should be taken over once the lease has passed since its last step', async () => {
    const clock = await h.services.testClocks.create(ctx, { frozenTime: '2027-01-01T00:00:00Z' });
    const first = pausedAdvance(clock.id, '2027-02-01T00:00:00Z');
    await first.steppedTwice;
    first.spy.mockRestore();
    h.clock.advance(LEASE_MS + 1);
    // No step for longer than the lease, as if its process had died: the next advance takes over.
    await expect(h.services.testClocks.advance(ctx, clock.id, { frozenTime: '2027-03-01T00:00:00Z' })).resolves.toMatchObject({ status: 'ready', frozenTime: '2027-03-01T00:00:00.000Z' });
    // The first advance, alive after all, has lost the clock: it is refused its next write and
    // leaves the clock as the advance that took it over left it (not back at its own target).
    first.release();
    await expect(first.done).rejects.toMatchObject({ code: 'invalid_state' });
    await expect(h.services.testClocks.retrieve(ctx, clock.id)).resolves.toMatchObject({ status: 'ready', frozenTime: '2027-03-01T00:00:00.000Z' });
  });

  it('should write each step of its hold in a transaction (on SQLite a write outside one waits for the lock on a pool thread)', async () => {
    const clock = await h.services.testClocks.create(ctx, { frozenTime: '2027-01-01T00:00:00Z' });
    const query = jest.spyOn(h.services.db.sequelize, 'query');
    try {
      await h.services.testClocks.advance(ctx, clock.id, { frozenTime: '2027-01-05T00:00:00Z' });
      const text = (sql: unknown) => (typeof sql === 'string' ? sql : String((sql as { query?: string }).query));
      const writes = query.mock.calls.map(([sql, options]) => [text(sql), options] as const).filter(([sql]) => /test_clocks/.test(sql) && /^\s*UPDATE\b/i.test(sql));
      // The hold taken, each step of the advance, the clock set and marked ready: all in transactions.
      expect(writes.length).toBeGreaterThanOrEqual(3);
      for (const [sql, options] of writes) expect({ sql, inTransaction: Boolean((options as { transaction?: unknown } | undefined)?.transaction) }).toEqual({ sql, inTransaction: true });
    } finally {
      query.mockRestore();
    }
  });
});
