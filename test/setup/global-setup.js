'use strict';
// Jest's global set-up, once per run (before any worker starts):
// 1. dist/ is compiled from the current sources if it is not already (scripts/build.js checks the
//    stamp), so instances and the CLI that tests spawn run compiled JavaScript, as `npm start`
//    does, instead of compiling the sources through ts-node in every child process.
// 2. One database is migrated, once, as the template every test's database is copied from (a
//    SQLite file copied per test; CREATE DATABASE … TEMPLATE on PostgreSQL), instead of running
//    every migration again for each test file. Its name goes to the workers in the environment.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const ROOT = path.join(__dirname, '..', '..');

module.exports = async function globalSetup() {
  require('../../scripts/build').ensureBuilt();
  const dialect = process.env.DB_DIALECT === 'postgres' ? 'postgres' : 'sqlite';
  const { migratedTemplate } = require('./template');
  const template = await migratedTemplate(dialect, ROOT, `${process.env.PAYORCH_TEST_DB_PREFIX || 'payorch_t'}_tpl_${randomBytes(4).toString('hex')}`, path.join(os.tmpdir(), `payorch-template-${process.pid}-${randomBytes(4).toString('hex')}`));
  process.env.PAYORCH_TEST_TEMPLATE = template.name;
  globalThis.__payorchTemplate = template;
};
