'use strict';
/**
 * Preloaded into the service by bench/dashboard (`node -r`), plain JavaScript so the compiled
 * service needs no TypeScript loader: records the statements the service sends to PostgreSQL, so
 * the benchmark's baseline can run exactly those, with the same values.
 *
 * Off until the process receives SIGUSR2; then every `pg` Client#query (Sequelize's and the
 * service's own prepared statements alike) is kept in memory with its text, values, statement
 * name and the times it was sent and answered (epoch ms, sub-millisecond). The next SIGUSR2 stops
 * recording and writes them as JSON to BENCH_CAPTURE_SQL. When on, it first writes an empty file
 * there, so the benchmark knows recording has started. While off it costs one check per statement.
 */
const fs = require('node:fs');
const { performance } = require('node:perf_hooks');
const pg = require('pg');

const file = process.env.BENCH_CAPTURE_SQL;
if (file) {
  const now = () => performance.timeOrigin + performance.now();
  let recording = null;
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function capturedQuery(config, values, callback) {
    if (!recording || config === null || config === undefined) return original.apply(this, arguments);
    const entry = {
      text: typeof config === 'string' ? config : config.text,
      values: typeof config === 'object' && config.values !== undefined ? config.values : Array.isArray(values) ? values : [],
      name: typeof config === 'object' ? config.name ?? null : null,
      sentAt: now(),
      doneAt: null,
    };
    recording.push(entry);
    const result = original.apply(this, arguments);
    const done = () => {
      entry.doneAt = now();
    };
    if (result && typeof result.then === 'function') result.then(done, done);
    else if (config && typeof config.on === 'function') {
      config.on('end', done);
      config.on('error', done);
    }
    return result;
  };
  process.on('SIGUSR2', () => {
    if (!recording) {
      recording = [];
      fs.writeFileSync(file, '');
    } else {
      const statements = recording;
      recording = null;
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(statements));
      fs.renameSync(`${file}.tmp`, file);
    }
  });
}
