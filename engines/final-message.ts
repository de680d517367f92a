/**
 * The final message of an engine whose output is plain text (the script engine, custom engines with `output: none`):
 * its last non-empty line, trimmed. The log is stdout and stderr interleaved, so a reviewer written as a script
 * prints its answer last, on one line.
 */
export function lastLineMessage(log: string): string | null {
  const lines = log.split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = (lines[i] ?? '').trim();
    if (line) return line;
  }
  return null;
}
