// The step files (spec/golden/cases/NAME.yaml) over the kernel twins: every step's tables as
// the kernel's tools print them, against NAME.expected.txt (spec/golden/README.md).
// GOLDEN_UPDATE=1 (`make golden UPDATE=1`) writes NAME.expected.txt instead;
// spec/vm/golden.vm.test.ts holds the real daemon and kernel to the same files.
import { runOverTwins } from '../../testkit/golden-twin';
import { loadStepCase, readExpected, stepCaseNames, writeExpected } from '../../testkit/steps';

const UPDATE = process.env.GOLDEN_UPDATE === '1';

describe.each(stepCaseNames())('step file %s, over the kernel twins', (name) => {
  it('programs, step by step, the tables its expected file holds', async () => {
    const c = loadStepCase(name);
    const run = await runOverTwins(c);
    expect(run.warnings).toEqual([]);
    if (UPDATE) writeExpected(c, run.outputs);
    const expected = readExpected(c);
    c.steps.forEach((s, i) => expect({ step: s.title, ...run.outputs[i] }).toEqual({ step: s.title, ...expected[i] }));
  });
});
