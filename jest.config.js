// Tests are compiled by tsc to dist/ first (make build); jest runs plain JS, so the
// same files run on the host (unit) and inside the QEMU guest (vm) without a transpiler.
/** @type {import('jest').Config} */
// the files are tsc's output already: no babel-jest pass (it cost half the CPU of a cold run,
// paid again by every VM boot, whose cache starts empty); a project option, so each sets it
const transform = {};
module.exports = {
  // generous: the VM guest runs JavaScript ~14x slower than the host (TCG); tests assert
  // behaviour, never time
  testTimeout: 300000,
  projects: [
    {
      displayName: 'unit',
      transform,
      // log lines are kept per test and printed only when the test fails
      testEnvironment: '<rootDir>/jest.unit-environment.js',
      setupFiles: ['<rootDir>/dist/spec/setup/capture-log.js'],
      roots: ['<rootDir>/dist/spec'],
      testMatch: ['**/*.test.js'],
      testPathIgnorePatterns: ['/dist/spec/vm/', '/dist/spec/lab/'],
    },
    {
      // on the host, against the lab's real kube-apiserver (KUBE_IPVS_LAB; scripts/test-all.sh)
      displayName: 'lab',
      transform,
      testEnvironment: 'node',
      roots: ['<rootDir>/dist/spec/lab'],
      testMatch: ['**/*.lab.test.js'],
    },
    {
      displayName: 'vm',
      transform,
      testEnvironment: 'node',
      roots: ['<rootDir>/dist/spec/vm'],
      testMatch: ['**/*.vm.test.js'],
    },
  ],
};
