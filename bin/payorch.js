#!/usr/bin/env node
'use strict';
// Runs the compiled service in dist/, compiling it first when it is missing or was built from
// other sources (scripts/build.js): the TypeScript compiler loaded into every instance cost about
// 100 MB of RSS. PAYORCH_FROM_SOURCE=1 runs the TypeScript sources through ts-node instead, with
// no build and no type-check: tests and development (`npm run dev`).
const path = require('node:path');

// libuv's thread pool (4 threads by default) runs every SQLite statement, and a statement waiting
// for SQLite's write lock (another instance's transaction, or a write on the default connection
// while this process's transaction holds the lock) sleeps on one of those threads, as do model
// reads queued behind it on that connection. With DNS lookups, file writes and crypto beside
// them, four waiting calls could leave the transaction that holds the lock no thread to run its
// next statement, and everything waited out the busy timeout (15 s). Sixteen makes that much less
// likely, not impossible: the cause is the default connection's writes (see README).
// Set before anything uses the pool; an operator's own UV_THREADPOOL_SIZE wins.
if (!process.env.UV_THREADPOOL_SIZE) process.env.UV_THREADPOOL_SIZE = '16';

// Tracing (OTEL_EXPORTER_OTLP_ENDPOINT) starts before the CLI is loaded: its instrumentations
// patch http, koa, pg and graphql as they are required, and the CLI requires them all.
if (process.env.PAYORCH_FROM_SOURCE === '1') {
  require('ts-node').register({ transpileOnly: true, project: path.join(__dirname, '..', 'tsconfig.json') });
  require('../src/observability/tracing.ts').startTracingFor(process.argv);
  require('../src/cli.ts').main(process.argv);
} else {
  try {
    require('../scripts/build').ensureBuilt();
  } catch (err) {
    process.stderr.write(`payorch: could not compile the sources: ${err.message}\n`);
    process.exit(1);
  }
  require('../dist/src/observability/tracing.js').startTracingFor(process.argv);
  require('../dist/src/cli.js').main(process.argv);
}
