// The unit project's test environment: log lines (captured by spec/setup/capture-log.ts) are
// printed only for a test that failed, so a passing unit run prints nothing on stderr.
const { TestEnvironment } = require('jest-environment-node');

class CapturedLogEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    /** lines logged since the current test started; the setup file pushes to it */
    this.global.__kubeIpvsLogLines = [];
  }

  async handleTestEvent(event) {
    const lines = this.global.__kubeIpvsLogLines;
    if (event.name === 'test_start') lines.length = 0;
    if (event.name === 'test_done' && event.test.errors.length > 0 && lines.length > 0) {
      process.stderr.write(`log of failed test "${event.test.name}":\n${lines.join('\n')}\n`);
    }
  }
}

module.exports = CapturedLogEnvironment;
