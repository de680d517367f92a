import os from 'node:os';

/** The short host name recorded in state files and rows: the hostname up to its first dot ('unknown' when empty). */
export function shortHost(): string {
  return os.hostname().split('.')[0] || 'unknown';
}
