// The extension-host side of the workbench probe (test/integration/webview-probe.mjs): one request, one answer, each
// file written whole (written under another name, then renamed) so neither side ever reads half a file.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sleep } from './until';

/** What the probe answers: whether the text showed (or the click or screenshot happened), else its first error line. */
export interface ProbeAnswer {
  found: boolean;
  error: string | null;
}

/**
 * A request the probe serves: `text` to find (inside the active webview, or in the workbench itself when `where` is
 * "workbench"), a CSS selector to `click` inside the webview, or a `screenshot` file to save the whole workbench to.
 */
export interface ProbeRequest {
  text?: string;
  where?: 'workbench';
  click?: string;
  screenshot?: string;
}

let next = 1;

/** The folder the probe serves; it exists only on the code-server route (the electron route has nobody to answer). */
export function probeDir(): string {
  return path.join(process.env.VERDICT_TEST_TMP as string, 'webview-probe');
}

/**
 * Sends the probe one request and waits for its answer (up to 40 s; the probe itself waits up to 30 s for text).
 * @returns the answer, or null when no probe serves (the @vscode/test-electron route)
 * @throws AssertionError when the probe does not answer in 40 s
 */
export async function askProbe(request: ProbeRequest): Promise<ProbeAnswer | null> {
  const dir = probeDir();
  if (!fs.existsSync(dir)) return null;
  const n = next++;
  const file = path.join(dir, `request-${n}.json`);
  fs.writeFileSync(`${file}.partial`, JSON.stringify(request));
  fs.renameSync(`${file}.partial`, file);
  const response = path.join(dir, `response-${n}.json`);
  for (let i = 0; i < 200 && !fs.existsSync(response); i++) await sleep(200);
  assert.ok(fs.existsSync(response), `the workbench probe did not answer ${JSON.stringify(request)} in 40 s`);
  return JSON.parse(fs.readFileSync(response, 'utf8')) as ProbeAnswer;
}
