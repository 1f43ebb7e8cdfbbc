'use strict';
// Drops the run's template database (test/setup/global-setup.js).
module.exports = async function globalTeardown() {
  await globalThis.__payorchTemplate?.drop();
};
