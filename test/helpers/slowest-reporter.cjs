// A mocha reporter for the unit and end-to-end tiers (`--reporter ./test/helpers/slowest-reporter.cjs` in package.json):
// mocha's spec reporter, then the tier's ten slowest tests with their times and files, so a tier that grows slow says
// where. Failed tests count too (a test that fails by timing out is often the slowest).
'use strict';
const path = require('node:path');
const Mocha = require('mocha');

const { EVENT_TEST_PASS, EVENT_TEST_FAIL, EVENT_RUN_END } = Mocha.Runner.constants;
const SHOWN = 10;

class SlowestReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    /** [ms, title, file] of every test that ran. */
    const times = [];
    const note = (test) => {
      if (typeof test.duration === 'number') times.push([test.duration, test.fullTitle(), test.file ? path.relative(process.cwd(), test.file) : '?']);
    };
    runner.on(EVENT_TEST_PASS, note);
    runner.on(EVENT_TEST_FAIL, note);
    // Registered after the spec reporter's own end handler: printed after its summary.
    runner.once(EVENT_RUN_END, () => {
      if (!times.length) return;
      times.sort((a, b) => b[0] - a[0]);
      const total = times.reduce((s, t) => s + t[0], 0);
      console.log(`  the ${Math.min(SHOWN, times.length)} slowest of ${times.length} tests (${(total / 1000).toFixed(0)} s of test time in all):`);
      for (const [ms, title, file] of times.slice(0, SHOWN))
        console.log(`    ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}: ${title.length > 110 ? `${title.slice(0, 107)}...` : title}`);
      console.log('');
    });
  }
}

module.exports = SlowestReporter;
