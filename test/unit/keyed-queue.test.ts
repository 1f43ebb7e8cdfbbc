import { KeyedQueue } from '../../src/core/keyed-queue';

/** A task that runs until `finish` is called, noting when it starts. */
function held(log: string[], name: string) {
  let finish!: (fail?: boolean) => void;
  const task = () => {
    log.push(`start ${name}`);
    return new Promise<string>((resolve, reject) => {
      finish = (fail) => (fail ? reject(new Error(name)) : resolve(name));
    });
  };
  return { task, finish: (fail?: boolean) => finish(fail) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyedQueue', () => {
  it('should run one key\'s tasks one after another in order, other keys side by side, whatever the outcome of each', async () => {
    const queue = new KeyedQueue();
    const log: string[] = [];
    const a1 = held(log, 'a1');
    const a2 = held(log, 'a2');
    const b1 = held(log, 'b1');
    const r1 = queue.run('a', a1.task);
    const r2 = queue.run('a', a2.task);
    const r3 = queue.run('b', b1.task);
    await tick();
    expect(log).toEqual(['start a1', 'start b1']);
    a1.finish(true);
    await expect(r1).rejects.toThrow('a1');
    await tick();
    expect(log).toEqual(['start a1', 'start b1', 'start a2']);
    a2.finish();
    b1.finish();
    expect(await Promise.all([r2, r3])).toEqual(['a2', 'b1']);
  });

  it('should forget a key once its last task settled', async () => {
    const queue = new KeyedQueue();
    await Promise.all([queue.run('a', async () => 1), queue.run('b', async () => 2), queue.run('a', async () => 3)]);
    await tick();
    expect(queue.size).toBe(0);
  });
});
