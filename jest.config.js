/** Jest runs the TypeScript sources through ts-jest without type-checking (CI runs tsc). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  setupFiles: ['reflect-metadata'],
  testTimeout: 60000,
  maxWorkers: process.env.JEST_WORKERS ? Number(process.env.JEST_WORKERS) : 2,
  // Node keeps each test file's vm context alive after the file ends (the leak Jest's docs name
  // for this option), so a worker grew by about 25 MB per file, past 550 MB by the end of a run;
  // freeing that at exit took longer than Jest waits (500 ms), hence "A worker process has
  // failed to exit gracefully" on every run. A worker past this size is replaced between files.
  workerIdleMemoryLimit: '300MB',
};
