// Preloaded by orchestrator-cpu.bench.ts (`node -r test/bench/main-thread-cpu.cjs …`): at exit, appends the CPU time of
// the process's main thread alone (user + system, ms; /proc/self/task/<pid>/stat fields 14 and 15, in clock ticks of
// 10 ms) and of the whole process (every thread, ms) as one line "main process" to the file $BENCH_CPU_FILE. Linux only.
process.on('exit', () => {
  const fs = require('node:fs');
  const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const main = (Number(fields[11]) + Number(fields[12])) * 10;
  const { user, system } = process.cpuUsage();
  fs.appendFileSync(process.env.BENCH_CPU_FILE, `${main} ${Math.round((user + system) / 1000)}\n`);
});
