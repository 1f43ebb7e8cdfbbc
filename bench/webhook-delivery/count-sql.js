'use strict';
/**
 * Preloaded into the delivery worker by bench/webhook-delivery (`node -r`), plain JavaScript so
 * the compiled service needs no TypeScript loader: counts the statements the worker sends to
 * PostgreSQL, by kind, with the time they took (sent to answered), and the process's CPU time from
 * its first claim. Each SIGUSR2 writes what
 * was counted so far as JSON to BENCH_COUNT_SQL. While the variable is unset it does nothing.
 */
const fs = require('node:fs');
const pg = require('pg');

const file = process.env.BENCH_COUNT_SQL;
if (file) {
  const { performance } = require('node:perf_hooks');
  const counts = {};
  const ms = {};
  let cpuAtFirstClaim = null;
  const kind = (text) => {
    if (/^\s*(START TRANSACTION|BEGIN)/i.test(text)) return 'begin';
    if (/^\s*COMMIT/i.test(text)) return 'commit';
    if (/^\s*ROLLBACK/i.test(text)) return 'rollback';
    if (/pending_endpoint/.test(text)) return 'claim';
    if (/UPDATE webhook_deliveries[\s\S]*INSERT INTO webhook_attempts/.test(text)) return 'settle batch (deliveries + attempts)';
    if (/^\s*UPDATE webhook_deliveries\s+SET status = CASE/.test(text)) return 'settle one delivery';
    if (/^\s*INSERT INTO webhook_attempts/.test(text)) return 'attempt row';
    if (/SET locked_until = /.test(text)) return 'lease renewal';
    return `other: ${text.replace(/\s+/g, ' ').slice(0, 60)}`;
  };
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function countedQuery(config) {
    const text = typeof config === 'string' ? config : config && config.text;
    if (typeof text === 'string') {
      const k = kind(text);
      if (k === 'claim' && cpuAtFirstClaim === null) cpuAtFirstClaim = process.cpuUsage();
      counts[k] = (counts[k] || 0) + 1;
      const sent = performance.now();
      const result = original.apply(this, arguments);
      const done = () => {
        ms[k] = (ms[k] || 0) + performance.now() - sent;
      };
      if (result && typeof result.then === 'function') result.then(done, done);
      return result;
    }
    return original.apply(this, arguments);
  };
  process.on('SIGUSR2', () => {
    const cpu = cpuAtFirstClaim ? process.cpuUsage(cpuAtFirstClaim) : { user: 0, system: 0 };
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ counts, ms, cpuMs: (cpu.user + cpu.system) / 1000 }));
    fs.renameSync(`${file}.tmp`, file);
  });
}
