import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { builtinEngines } from '../../engines';
import { ManifestError } from '../../extension/core/manifest/types';
import { forecast, type PlanTask } from '../../extension/core/scoreboard/forecast';
import { budgetCheck, confirmationReason, entryForecastText, forecastManifest, forecastText, forecastTotalLine } from '../../extension/core/scoreboard/plan';
import { WORKFLOW_SECTIONS } from '../../extension/core/run/workflows';

// The forecast's totals when part of a manifest has no history (core/scoreboard/forecast.ts, plan.ts): unknown is
// never $0, and the editor's confirmation never takes it as under its threshold.

const task = (key: string, extra: Partial<PlanTask> = {}): PlanTask => ({ key, engine: 'claude', model: 'acme/m', taskType: 't', ...extra });

describe('forecast: unknown cost is unknown, not $0', () => {
  it('a manifest with no history: totals null, the line says "cost unknown", the CodeLens "no history"', () => {
    const f = forecast([task('a'), task('b')], null);
    assert.deepEqual([f.total.costMedianMicroUsd, f.total.costP90MicroUsd, f.total.durationMedianMs, f.total.costUnknown], [null, null, null, 2]);
    assert.equal(forecastTotalLine(f), 'forecast: cost unknown — no history for any of its 2 task(s)');
    assert.equal(entryForecastText(f.tasks.slice(0, 1)), 'no history');
  });

  it('the confirmation threshold: unknown asks unless a budget_usd at or below the threshold caps the run', () => {
    const f = forecast([task('a')], null);
    assert.match(
      confirmationReason({ ...f, budgetMicroUsd: null }, 1) ?? '',
      /its cost is unknown and no budget_usd caps it: it may cost more than your \$1 threshold/,
    );
    assert.match(confirmationReason({ ...f, budgetMicroUsd: 5_000_000 }, 1) ?? '', /its budget_usd \$5\.00 is above your \$1 threshold/);
    assert.equal(confirmationReason({ ...f, budgetMicroUsd: 1_000_000 }, 1), null, 'budget_usd $1 caps it at the threshold');
    assert.notEqual(confirmationReason({ ...f, budgetMicroUsd: null }, 1_000_000), null, 'unknown is not under even a huge threshold');
  });

  it('a script task (no model) costs 0 with or without history: a manifest of scripts forecasts $0 and runs unasked', () => {
    const f = forecast([task('s', { engine: 'script', model: null, free: true })], null);
    assert.deepEqual([f.total.costMedianMicroUsd, f.total.costUnknown], [0, 0]);
    assert.equal(forecastTotalLine(f), 'forecast: $0.00 expected (p50), $0.00 at p90');
    assert.equal(confirmationReason({ ...f, budgetMicroUsd: null }, 1), null);
    assert.equal(entryForecastText(f.tasks), 'expected $0.00 (p50) · $0.00 at p90 · runs no model');
  });

  it('budgetCheck: with nothing known there is no figure to hold a budget against (lint stays silent); an unknown task key says nothing', () => {
    const none = forecast([task('a')], null);
    assert.equal(budgetCheck(none)(1, null), null);
    assert.equal(budgetCheck(none)(1, 'a'), null);
    assert.equal(budgetCheck(none)(1, 'nope'), null);
  });

  it('an engine "auto" manifest without its own route: the editor\'s text and the saved file forecast with the config\'s route', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-forecast-'));
    const file = path.join(dir, 'auto.swarm.json');
    const text = JSON.stringify({
      run_name: 'auto',
      engine: 'auto',
      tasks: [{ key: 'k', task_type: 't', spec: 'do it', check: 'test -s out.txt', verified: 'out.txt is written' }],
    });
    fs.writeFileSync(file, text);
    const home = path.join(dir, 'home');
    const route = { from: ['claude:acme/m'], explore: 0 };
    const fromText = await forecastText(text, file, home, builtinEngines(), route, WORKFLOW_SECTIONS);
    assert.deepEqual(
      fromText?.forecast.tasks.map((t) => [t.key, t.engine, t.model]),
      [['k', 'claude', 'acme/m']],
    );
    assert.equal(fromText?.manifest.tasks[0]?.key, 'k');
    const fromFile = await forecastManifest(file, home, builtinEngines(), route, WORKFLOW_SECTIONS);
    assert.deepEqual(Object.keys(fromFile.routes), ['k']);
    // Without the config's route the manifest does not load: no forecast, the reason with its position.
    assert.equal(await forecastText(text, file, home, builtinEngines(), null, WORKFLOW_SECTIONS), null);
    await assert.rejects(
      forecastManifest(file, home, builtinEngines(), null, WORKFLOW_SECTIONS),
      (e: unknown) => e instanceof ManifestError && /needs a route block/.test(e.message),
    );
  });
});
