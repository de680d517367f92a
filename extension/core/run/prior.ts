/**
 * What a resumed run continues from (`verdict resume`): the tasks of the run it resumes and of the runs that one
 * resumed, newest first, so a task that passed two resumes ago still releases its dependents (from its commit).
 */
import path from 'node:path';
import { runDir } from '../config/home';
import { readState } from '../live/registry';
import type { PriorTask } from './run-types';

/** Each task key's last status in `runId` and the runs it resumed (a key's newest run wins). Unreadable runs end the chain. */
export function priorTasks(home: string, runId: string): Map<string, PriorTask> {
  const out = new Map<string, PriorTask>();
  const seen = new Set<string>();
  let id: string | undefined = runId;
  while (id && !seen.has(id)) {
    seen.add(id);
    const read = readState(path.join(runDir(home, id), 'state.json'));
    if (!('state' in read)) break;
    for (const t of read.state.tasks) if (!out.has(t.key)) out.set(t.key, { status: t.status, runId: id, commit: t.commit });
    id = read.state.resumedFrom;
  }
  return out;
}
