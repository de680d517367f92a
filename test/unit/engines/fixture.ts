import fs from 'node:fs';

/** A captured worker log from test/fixtures/engines (real CLI output against the scripted model server). */
export function engineFixture(name: string): string {
  return fs.readFileSync(new URL(`../../fixtures/engines/${name}.jsonl`, import.meta.url), 'utf8');
}
