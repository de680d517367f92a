// Prints the mocha flags that size the end-to-end tier's parallelism (package.json `test:e2e`: `mocha $(node
// test/helpers/e2e-jobs.cjs) …`): `--parallel --jobs N` with N = VERDICT_E2E_JOBS, else one fewer than the cores
// (mocha's own default), and nothing when N is 1 — a two-core machine runs the files one after another, in mocha's own
// process (`--parallel --jobs 1` would load ESM-only packages through require and fail). Measured in docs/testing.md.
'use strict';
const os = require('node:os');

const asked = process.env.VERDICT_E2E_JOBS;
const jobs = asked === undefined || asked === '' ? Math.max(1, os.availableParallelism() - 1) : Number(asked);
if (!Number.isInteger(jobs) || jobs < 1) {
  console.error(`VERDICT_E2E_JOBS=${asked}: not a whole number of at least 1`);
  process.exit(2);
}
if (jobs > 1) console.log(`--parallel --jobs ${jobs}`);
