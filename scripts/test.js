#!/usr/bin/env node
'use strict';
// `npm test`: the whole jest suite once on SQLite and once on PostgreSQL (DB_DIALECT picks one).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const dialects = process.env.DB_DIALECT ? [process.env.DB_DIALECT] : ['sqlite', 'postgres'];
const extraArgs = process.argv.slice(2);
const jest = path.join(__dirname, '..', 'node_modules', 'jest', 'bin', 'jest.js');
let passed = 0;
let failed = 0;
let ok = true;

for (const dialect of dialects) {
  process.stdout.write(`\n=== jest on ${dialect} ===\n`);
  const report = path.join(os.tmpdir(), `payorch-jest-${dialect}-${process.pid}.json`);
  const result = spawnSync(process.execPath, [jest, '--json', `--outputFile=${report}`, ...extraArgs], {
    stdio: 'inherit',
    env: { ...process.env, DB_DIALECT: dialect },
  });
  if (result.status !== 0) ok = false;
  try {
    const summary = JSON.parse(fs.readFileSync(report, 'utf8'));
    passed += summary.numPassedTests;
    failed += summary.numFailedTests + (summary.numRuntimeErrorTestSuites || 0);
    if (summary.numTotalTests === 0) ok = false;
    fs.rmSync(report, { force: true });
  } catch {
    ok = false;
    failed += 1;
  }
}

process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(ok && failed === 0 ? 0 : 1);
