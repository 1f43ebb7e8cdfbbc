/** Jest runs the TypeScript sources through ts-jest without type-checking (CI runs tsc). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  setupFiles: ['reflect-metadata'],
  testTimeout: 60000,
  maxWorkers: process.env.JEST_WORKERS ? Number(process.env.JEST_WORKERS) : 2,
};
