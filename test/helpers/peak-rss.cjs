'use strict';
// Preloaded into a CLI under test (`node --require test/helpers/peak-rss.cjs dist/cli.js …`): when the process exits,
// its peak resident set (VmHWM of /proc/self/status, kB) is written to the file named by VERDICT_TEST_PEAK_RSS_FILE.
// VmHWM is the kernel's high-water mark, so a spike between two samples is not missed.
const fs = require('node:fs');
const out = process.env.VERDICT_TEST_PEAK_RSS_FILE;
if (out) {
  delete process.env.VERDICT_TEST_PEAK_RSS_FILE;
  process.on('exit', () => {
    try {
      const m = /^VmHWM:\s*(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
      fs.writeFileSync(out, m ? m[1] : '');
    } catch {
      // no /proc: nothing written, the test says so
    }
  });
}
