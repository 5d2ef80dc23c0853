/** Jest: TypeScript through ts-jest (transpile only, via tsconfig.spec.json; `npm run lint` type-checks). */
module.exports = {
  testEnvironment: 'node',
  rootDir: __dirname,
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.spec.json' }],
  },
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  setupFilesAfterEnv: ['<rootDir>/test/setup/fail-on-unhandled-rejection.ts'],
  testTimeout: 30000,
  testSequencer: '<rootDir>/test/setup/sequencer.js',
};
