'use strict';
/*
 * Preloaded (`node -r`) into a process bench/latency measures, with BENCH_TRACE_FILE set: for each
 * HTTPS request it serves, how long the request took inside the process (from the 'request'
 * event to the response's 'finish'), how long it spent waiting for the database (each pg query,
 * each sqlite3 call, from the call to its answer, overlapping ones counted once) and how many
 * database calls it made. SIGUSR1 writes the totals since the last SIGUSR1 to BENCH_TRACE_FILE
 * (one JSON object) and starts counting afresh. Plain JavaScript, no dependency of its own: it
 * patches the drivers the process loads, so the service runs its own code unchanged.
 */
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const { AsyncLocalStorage } = require('node:async_hooks');

const file = process.env.BENCH_TRACE_FILE;
const store = new AsyncLocalStorage();
let totals = fresh();

function fresh() {
  return { requests: 0, inProcessMs: 0, dbWaitMs: 0, dbCalls: 0, calls: {} };
}

/** Notes a database call of the current request starting now; returns the function that ends it. */
function begin(label) {
  const request = store.getStore();
  if (!request) return () => undefined;
  const started = process.hrtime.bigint();
  request.dbCalls++;
  if (request.open++ === 0) request.openedAt = started;
  totals.calls[label] = (totals.calls[label] || 0) + 1;
  return () => {
    if (--request.open === 0) request.dbWaitNs += process.hrtime.bigint() - request.openedAt;
  };
}

function requireFromService(name) {
  return require(require.resolve(name, { paths: [process.cwd(), path.join(__dirname, '..', '..')] }));
}

function label(text) {
  const t = String(text || '').trim();
  const word = t.split(/\s+/)[0].toUpperCase();
  return word.replace(/;$/, '') || '?';
}

try {
  const pg = requireFromService('pg');
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function tracedQuery(config, values, callback) {
    const end = begin(`pg ${label(typeof config === 'string' ? config : config && config.text)}`);
    const result = query.call(this, config, values, callback);
    if (result && typeof result.then === 'function') result.then(end, end);
    else end();
    return result;
  };
} catch {
  // no pg in this process
}

try {
  const sqlite3 = requireFromService('sqlite3');
  // Database#run and #all prepare a Statement and call its own run or all: one call, counted once.
  let inDatabaseCall = 0;
  for (const proto of [sqlite3.Database.prototype, sqlite3.Statement.prototype]) {
    const isDatabase = proto === sqlite3.Database.prototype;
    for (const method of ['run', 'all', 'get', 'exec']) {
      const original = proto[method];
      if (typeof original !== 'function') continue;
      proto[method] = function tracedCall(...args) {
        if (!isDatabase && inDatabaseCall > 0) return original.apply(this, args);
        const sql = typeof args[0] === 'string' ? args[0] : this.sql;
        const end = begin(`sqlite ${label(sql)}`);
        const at = args.findIndex((a) => typeof a === 'function');
        if (at === -1) end();
        else {
          const callback = args[at];
          args[at] = function ended(...results) {
            end();
            return callback.apply(this, results);
          };
        }
        if (!isDatabase) return original.apply(this, args);
        inDatabaseCall++;
        try {
          return original.apply(this, args);
        } finally {
          inDatabaseCall--;
        }
      };
    }
  }
} catch {
  // no sqlite3 in this process
}

const emit = https.Server.prototype.emit;
https.Server.prototype.emit = function tracedEmit(event, req, res) {
  if (event !== 'request') return emit.apply(this, arguments);
  const request = { started: process.hrtime.bigint(), dbCalls: 0, open: 0, openedAt: 0n, dbWaitNs: 0n };
  res.on('finish', () => {
    totals.requests++;
    totals.inProcessMs += Number(process.hrtime.bigint() - request.started) / 1e6;
    totals.dbWaitMs += Number(request.dbWaitNs) / 1e6;
    totals.dbCalls += request.dbCalls;
  });
  return store.run(request, () => emit.call(this, event, req, res));
};

if (file) {
  process.on('SIGUSR1', () => {
    // Whole or not at all: the reader waits for the file to appear.
    fs.writeFileSync(`${file}.part`, JSON.stringify(totals));
    fs.renameSync(`${file}.part`, file);
    totals = fresh();
  });
}
