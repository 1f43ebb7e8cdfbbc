#!/usr/bin/env node
'use strict';
// `npm test`: the whole jest suite once on SQLite and once on PostgreSQL (DB_DIALECT picks one).
// Arguments go to jest: a file (`npm run test:sqlite -- test/api/payments.test.ts`), a tier
// (`-- --selectProjects api`), a test name (`-- -t 'should refund'`). It ends with the count
// of tests per tier and dialect, and the line `N passed, N failed`.
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
/** Tests per tier (the folder under test/) and dialect: `api/sqlite` → {passed, failed}. */
const tiers = new Map();

for (const dialect of dialects) {
  process.stdout.write(`\n=== jest on ${dialect} ===\n`);
  const report = path.join(os.tmpdir(), `payorch-jest-${dialect}-${process.pid}.json`);
  const result = spawnSync(process.execPath, [jest, '--json', `--outputFile=${report}`, ...extraArgs], {
    stdio: 'inherit',
    // The thread pool the service sets for itself (bin/payorch.js): tests run it in-process.
    env: { UV_THREADPOOL_SIZE: '16', ...process.env, DB_DIALECT: dialect },
  });
  if (result.status !== 0) ok = false;
  try {
    const summary = JSON.parse(fs.readFileSync(report, 'utf8'));
    passed += summary.numPassedTests;
    failed += summary.numFailedTests + (summary.numRuntimeErrorTestSuites || 0);
    for (const file of summary.testResults) {
      const tier = path.relative(path.join(__dirname, '..', 'test'), file.name).split(path.sep)[0];
      const counts = tiers.get(`${tier}/${dialect}`) ?? { passed: 0, failed: 0 };
      for (const t of file.assertionResults) {
        if (t.status === 'passed') counts.passed += 1;
        else if (t.status === 'failed') counts.failed += 1;
      }
      tiers.set(`${tier}/${dialect}`, counts);
    }
    if (summary.numTotalTests === 0) ok = false;
    fs.rmSync(report, { force: true });
  } catch {
    ok = false;
    failed += 1;
  }
}

process.stdout.write('\ntests per tier:\n');
for (const [name, counts] of [...tiers].sort()) process.stdout.write(`  ${name.padEnd(22)} ${counts.passed} passed, ${counts.failed} failed\n`);
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(ok && failed === 0 ? 0 : 1);
