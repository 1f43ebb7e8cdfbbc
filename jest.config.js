/**
 * The suite in tiers (jest projects), each a folder of test/: `unit` (pure logic, a database at
 * most), `service` (the services on a real database, no transport), `api` (REST over real HTTPS),
 * `graphql`, `connectors` (gateway contracts) and `e2e` (Chromium). `--selectProjects unit
 * service` runs some (npm run test:fast). Jest runs the TypeScript through ts-jest without
 * type-checking (isolatedModules in tsconfig.json; CI runs tsc --noEmit).
 *
 * The global set-up compiles dist/ when it is stale (spawned instances and the CLI run it) and
 * migrates one template database that every test's database is copied from.
 */
const TIERS = ['unit', 'service', 'api', 'graphql', 'connectors', 'e2e'];

const tier = (name) => ({
  displayName: name,
  testEnvironment: 'node',
  roots: [`<rootDir>/test/${name}`],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  setupFiles: ['reflect-metadata'],
});

module.exports = {
  projects: TIERS.map(tier),
  globalSetup: '<rootDir>/test/setup/global-setup.js',
  globalTeardown: '<rootDir>/test/setup/global-teardown.js',
  // A global option: set in a project, Jest 30 ignores it (the 5 s default applied).
  testTimeout: 60000,
  // Three on this 2-core machine: test files spend much of their time waiting (on spawned
  // instances, leases, sockets and timers), so a third worker fills the cores (SQLite tier run:
  // 3 min 11 s with three, about 5 min with two). JEST_WORKERS overrides it.
  maxWorkers: process.env.JEST_WORKERS ? Number(process.env.JEST_WORKERS) : 3,
  // Node keeps each test file's vm context alive after the file ends (the leak Jest's docs name
  // for this option), so a worker grew by about 25 MB per file, past 550 MB by the end of a run;
  // freeing that at exit took longer than Jest waits (500 ms), hence "A worker process has
  // failed to exit gracefully" on every run. A worker past this size is replaced between files.
  workerIdleMemoryLimit: '300MB',
};
