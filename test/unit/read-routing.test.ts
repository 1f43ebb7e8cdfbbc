import pg from 'pg';
import { readOnlySql } from '../../src/db/database';
import {
  ReadRouting, currentReadScope, noteScopeWrote, realNow, replicaReadAllowed, withReplicaReads, allowReplicaReads,
} from '../../src/db/read-routing';
import { ReplicaSet, measureLag, parseLsn, replicaFailure, replicaName } from '../../src/db/replicas';

// What decides where a read goes when read replicas are configured, without a server: the
// request's scope and its caller's last write, the choice among replicas, the lag measure, and
// which failures send a read back to the primary. test/api/read-replicas.test.ts runs it all
// against a real streaming standby.

describe('read scopes and read-your-writes', () => {
  it('should keep a request on the primary until its route says it only reads', async () => {
    const routing = new ReadRouting(2000, 5000);
    await routing.run(async (scope) => {
      expect(currentReadScope()).toBe(scope);
      expect(replicaReadAllowed()).toBe(false);
      allowReplicaReads('key:a');
      expect(replicaReadAllowed()).toBe(true);
      expect(scope.notBefore).toBeUndefined();
      // A write in the request: what it reads after comes from the primary.
      noteScopeWrote();
      expect(replicaReadAllowed()).toBe(false);
    });
    expect(currentReadScope()).toBeUndefined();
    // No scope (no replicas, a worker): nothing to allow.
    allowReplicaReads('key:a');
    expect(replicaReadAllowed()).toBe(false);
  });

  it('should send a caller that wrote within the window to the primary, and after it to a replica holding its write', async () => {
    let now = 1_000_000;
    const routing = new ReadRouting(2000, 5000, () => now);
    routing.noteWrite('key:a');
    const scopeAt = (caller: string) => routing.run(async (scope) => {
      routing.allow(scope, caller);
      return { afterWrite: scope.afterWrite ?? false, notBefore: scope.notBefore ?? null, allowed: replicaReadAllowed(scope) };
    });
    now += 1999;
    expect(await scopeAt('key:a')).toEqual({ afterWrite: true, notBefore: 1_000_000, allowed: false });
    // Another key of the same account never waits for key a's writes.
    expect(await scopeAt('key:b')).toEqual({ afterWrite: false, notBefore: null, allowed: true });
    now += 1;
    expect(await scopeAt('key:a')).toEqual({ afterWrite: false, notBefore: 1_000_000, allowed: true });
    // Forgotten once no healthy replica can still lack it.
    now += 5001;
    routing.noteWrite('key:b');
    expect(routing.size).toBe(1);
    expect(await scopeAt('key:a')).toEqual({ afterWrite: false, notBefore: null, allowed: true });
  });

  it('should send a caller that was sent an event to a replica only once it holds that event, with no window', async () => {
    let now = 5_000;
    const routing = new ReadRouting(2000, 5000, () => now);
    routing.noteSeen('key:dashboard');
    now += 10;
    const scope = await routing.run(async (s) => {
      routing.allow(s, 'key:dashboard');
      return { ...s };
    });
    expect(scope).toMatchObject({ replica: true, notBefore: 5_000, afterWrite: false });
    // A write's window is kept when an event comes after it.
    routing.noteWrite('key:writer');
    now += 100;
    routing.noteSeen('key:writer');
    const writer = await routing.run(async (s) => {
      routing.allow(s, 'key:writer');
      return { ...s };
    });
    expect(writer).toMatchObject({ notBefore: 5_110, afterWrite: true });
  });

  it('should give an export its own scope that asks a replica for every commit before it was created', async () => {
    const scope = await withReplicaReads(async () => currentReadScope(), { notBefore: 42 });
    expect(scope).toEqual({ replica: true, notBefore: 42 });
  });
});

describe('choosing a replica', () => {
  const set = new ReplicaSet({ urls: ['postgres://u:secret@r1:5433/payorch', 'postgres://u@r2/payorch'], primaryUrl: 'postgres://u@p/payorch', maxLagMs: 5000 });
  const [r1, r2] = set.replicas;
  const fresh = (r: typeof r1, healthy: boolean, freshAsOf = realNow()) => Object.assign(r, { healthy, checkedAt: realNow(), freshAsOf });
  afterAll(() => set.close());

  it('should name a replica by host, port and database, never its password', () => {
    expect([r1.name, r2.name]).toEqual(['r1:5433/payorch', 'r2:5432/payorch']);
    expect(replicaName('postgresql://a:b@[::1]:6000/x')).toBe('[::1]:6000/x');
  });

  it('should take turns among the healthy replicas and skip the others', () => {
    fresh(r1, true);
    fresh(r2, true);
    const picked = [set.pick(undefined), set.pick(undefined), set.pick(undefined), set.pick(undefined)];
    expect(new Set(picked)).toEqual(new Set([r1, r2]));
    fresh(r2, false);
    expect([set.pick(undefined), set.pick(undefined)]).toEqual([r1, r1]);
    fresh(r1, false);
    expect(set.pick(undefined)).toBeNull();
  });

  it('should skip a replica whose last check is old (a hung server) or that lacks the caller\'s write', () => {
    fresh(r1, true, 1000);
    fresh(r2, false);
    expect(set.pick({ replica: true, notBefore: 999 })).toBe(r1);
    expect(set.pick({ replica: true, notBefore: 1001 })).toBeNull();
    r1.checkedAt = realNow() - 5001;
    expect(set.pick(undefined)).toBeNull();
  });

  it('should warn once when no replica is usable, name a replica skipped while others serve, and say when they are back', () => {
    const lines: Array<[string, string]> = [];
    const logger = { warn: (_o: object, msg: string) => lines.push(['warn', msg]), info: (_o: object, msg: string) => lines.push(['info', msg]) };
    const watched = new ReplicaSet({ urls: ['postgres://u@r1/db', 'postgres://u@r2/db'], primaryUrl: 'postgres://u@p/db', maxLagMs: 5000, logger });
    const [a, b] = watched.replicas;
    const report = () => (watched as unknown as { report(): void }).report();
    a.healthy = true;
    b.healthy = true;
    report();
    expect(lines).toEqual([]);
    watched.failed(a, new Error('connect ECONNREFUSED'));
    expect(a.reason).toBe('unreachable: connect ECONNREFUSED');
    watched.failed(b, new Error('Connection terminated'));
    watched.failed(b, new Error('again'));
    report();
    expect(lines).toEqual([['warn', 'read replica skipped'], ['warn', 'no read replica usable: the primary serves every read']]);
    b.healthy = true;
    report();
    a.healthy = true;
    report();
    expect(lines.slice(2)).toEqual([['info', 'read replicas usable again: reads go to them'], ['info', 'read replica back']]);
    return watched.close();
  });
});

describe('measuring a replica\'s lag', () => {
  const lsn = (text: string) => parseLsn(text) as bigint;

  it('should read a WAL position as bytes', () => {
    expect(parseLsn('0/3016038')).toBe(0x3016038n);
    expect(parseLsn('1/0')).toBe(1n << 32n);
    expect(parseLsn(null)).toBeNull();
    expect(parseLsn('nonsense')).toBeNull();
  });

  it('should count a replica that replayed the primary\'s position as 0 behind, however old its last replayed commit', () => {
    // An idle primary: the last commit is an hour old, yet nothing is missing.
    const current = { at: 10_000, lsn: lsn('0/4000000') };
    expect(measureLag({ replay: lsn('0/4000000'), replayedAt: 10_000 - 3_600_000, current, samples: [current], at: 10_005 })).toEqual({ freshAsOf: 10_000, lagMs: 0 });
  });

  it('should bound the lag of a replica behind by the last sample it reached or its last replayed commit, whichever is later', () => {
    const samples = [{ at: 1000, lsn: lsn('0/100') }, { at: 2000, lsn: lsn('0/200') }, { at: 3000, lsn: lsn('0/300') }];
    const current = samples[2];
    // Replay stopped at 0/250: the primary was last known at or before it at 2000.
    expect(measureLag({ replay: lsn('0/250'), replayedAt: null, current, samples, at: 3100 })).toEqual({ freshAsOf: 2000, lagMs: 1100 });
    // A commit replayed since, made at 2900: fresher than the sample.
    expect(measureLag({ replay: lsn('0/250'), replayedAt: 2900, current, samples, at: 3100 })).toEqual({ freshAsOf: 2900, lagMs: 200 });
    // Behind every sample kept, and no commit replayed: not known (skipped).
    expect(measureLag({ replay: lsn('0/50'), replayedAt: null, current, samples, at: 3100 })).toEqual({ freshAsOf: -Infinity, lagMs: null });
    // The primary did not answer this check: the earlier samples still bound it.
    expect(measureLag({ replay: lsn('0/300'), replayedAt: null, current: null, samples, at: 3500 })).toEqual({ freshAsOf: 3000, lagMs: 500 });
  });
});

describe('what goes back to the primary', () => {
  const refusal = (code: string) => Object.assign(new pg.DatabaseError('refused', 0, 'error'), { code });

  it('should run a read again on the primary, and skip the replica, when the replica is down or going away', () => {
    expect(replicaFailure(new Error('Connection terminated unexpectedly'))).toEqual({ retry: true, skip: true });
    expect(replicaFailure(Object.assign(new Error('connect'), { name: 'SequelizeConnectionRefusedError', parent: new Error('ECONNREFUSED') }))).toEqual({ retry: true, skip: true });
    expect(replicaFailure(refusal('57P01'))).toEqual({ retry: true, skip: true });
    expect(replicaFailure(refusal('08006'))).toEqual({ retry: true, skip: true });
  });

  it('should run it again without skipping the replica for a recovery conflict, a full pool or a write a standby refuses', () => {
    expect(replicaFailure(refusal('40001'))).toEqual({ retry: true, skip: false });
    expect(replicaFailure(refusal('53300'))).toEqual({ retry: true, skip: false });
    expect(replicaFailure(refusal('25006'))).toEqual({ retry: true, skip: false });
    expect(replicaFailure(Object.assign(new Error('timeout'), { name: 'SequelizeConnectionAcquireTimeoutError' }))).toEqual({ retry: true, skip: false });
  });

  it("should leave the statement's own refusal as it is (the primary would refuse it alike)", () => {
    expect(replicaFailure(refusal('42601'))).toEqual({ retry: false, skip: false });
    expect(replicaFailure(Object.assign(new Error('wrapped'), { parent: refusal('22P02') }))).toEqual({ retry: false, skip: false });
  });

  it('should read on a replica only statements that change nothing and lock nothing', () => {
    expect(readOnlySql('SELECT id, updated_at, deleted_at FROM customers WHERE account_id = $1')).toBe(true);
    expect(readOnlySql('  with page AS (SELECT id FROM payments) SELECT * FROM page')).toBe(true);
    expect(readOnlySql('UPDATE exports SET status = $1 RETURNING id')).toBe(false);
    expect(readOnlySql('WITH claimed AS (UPDATE exports SET lock_token = $1 RETURNING *) SELECT * FROM claimed')).toBe(false);
    expect(readOnlySql('INSERT INTO x VALUES (1) ON CONFLICT DO NOTHING RETURNING id')).toBe(false);
    expect(readOnlySql('SELECT * FROM payments WHERE id = $1 FOR UPDATE')).toBe(false);
    expect(readOnlySql('SELECT * FROM payments WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED')).toBe(false);
    expect(readOnlySql('SELECT * FROM customers WHERE id = $1 FOR KEY SHARE')).toBe(false);
    expect(readOnlySql("SELECT pg_try_advisory_xact_lock(hashtext('x')) AS ok")).toBe(false);
    expect(readOnlySql("SELECT nextval('invoice_numbers')")).toBe(false);
  });
});
