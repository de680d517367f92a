import type { HostToPage } from '../../schemas/protocol';
import { DashboardSession } from '../../extension/core/dashboard/session';
import type { DashboardSource } from '../../extension/core/dashboard/source';

/**
 * A dashboard session over `source` as the browser host opens it (an empty scoreboard, no actions), with the messages
 * it posts to its page collected in `posted`, oldest first.
 */
export function browserSession(
  source: DashboardSource,
  log: ConstructorParameters<typeof DashboardSession>[2]['log'],
): { session: DashboardSession; posted: HostToPage[] } {
  const posted: HostToPage[] = [];
  const session = new DashboardSession(
    source,
    { post: (m) => posted.push(m) },
    { host: 'browser', log, scoreboard: async () => ({ rows: [], source: 'none' }) },
  );
  return { session, posted };
}
