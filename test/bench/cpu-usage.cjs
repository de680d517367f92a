// Preloaded by the benchmarks (`node -r test/bench/cpu-usage.cjs …`, see cpu-time.ts): at exit, appends the process's
// CPU time (user + system, microseconds, every thread of the process) as one line to the file $BENCH_CPU_FILE.
process.on('exit', () => {
  const { user, system } = process.cpuUsage();
  require('node:fs').appendFileSync(process.env.BENCH_CPU_FILE, `${user + system}\n`);
});
