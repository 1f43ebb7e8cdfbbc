import { context, trace } from '@opentelemetry/api';
import { node } from '@opentelemetry/sdk-node';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { WriteBatcher } from '../../src/db/batcher';

// The SDK registered in this process only (unit tests run each file in its own module registry,
// the global tracer provider is this process's): spans kept in memory.
const exporter = new InMemorySpanExporter();
const provider = new node.NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

const tracer = trace.getTracer('test');

/** `item` submitted from inside a request's span named `request`. */
const submitIn = (batcher: WriteBatcher<string, string>, request: string, item: string) =>
  tracer.startActiveSpan(request, async (span) => {
    try {
      return await batcher.submit(item);
    } finally {
      span.end();
    }
  });

function batcher(run: (items: string[]) => Promise<string[]> = async (items) => items) {
  return new WriteBatcher<string, string>({ name: 'test.items', run, maxBatch: 64, maxInFlight: 1, isRefusal: () => false });
}

const named = (name: string): ReadableSpan => {
  const found = exporter.getFinishedSpans().find((s) => s.name === name);
  if (!found) throw new Error(`no span ${name}`);
  return found;
};

describe('WriteBatcher, traced', () => {
  it("should write a batch as a span under its first item's request, linked to the other items' requests", async () => {
    const b = batcher();
    await Promise.all([submitIn(b, 'request a', 'a'), submitIn(b, 'request b', 'b'), submitIn(b, 'request c', 'c')]);
    const commit = named('db.group_commit');
    expect(commit.parentSpanContext?.spanId).toBe(named('request a').spanContext().spanId);
    expect(commit.spanContext().traceId).toBe(named('request a').spanContext().traceId);
    expect(commit.links.map((l) => l.context.spanId)).toEqual([named('request b').spanContext().spanId, named('request c').spanContext().spanId]);
    expect(commit.attributes).toEqual({ 'payorch.db.batch': 'test.items', 'payorch.db.batch_size': 3 });
  });

  it('should run a batch gathered while another ran in its own first request, not in the one that ran before', async () => {
    const held: Array<() => void> = [];
    const b = batcher(async (items) => {
      if (items.includes('a')) await new Promise<void>((resolve) => held.push(resolve));
      return items;
    });
    const first = submitIn(b, 'request a', 'a');
    await new Promise((r) => setImmediate(r));
    const second = submitIn(b, 'request b', 'b');
    held.splice(0).forEach((release) => release());
    await Promise.all([first, second]);
    const commits = exporter.getFinishedSpans().filter((s) => s.name === 'db.group_commit');
    expect(commits.map((c) => c.parentSpanContext?.spanId).sort()).toEqual([named('request a').spanContext().spanId, named('request b').spanContext().spanId].sort());
  });

  it('should make no span for items submitted outside any span (a worker\'s writes)', async () => {
    const b = batcher();
    expect(await Promise.all([b.submit('x'), b.submit('y')])).toEqual(['x', 'y']);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
