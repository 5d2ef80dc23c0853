/** Jest: TypeScript through ts-jest (transpile only; `npm run lint` type-checks), real Redis nodes per file. */
module.exports = {
  testEnvironment: 'node',
  rootDir: __dirname,
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { isolatedModules: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
  setupFilesAfterEnv: ['<rootDir>/test/setup/fail-on-unhandled-rejection.ts'],
  testTimeout: 30000,
};
