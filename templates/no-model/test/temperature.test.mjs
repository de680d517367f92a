import test from 'node:test';
import assert from 'node:assert/strict';
import { toFahrenheit } from '../src/temperature.mjs';

test('water freezes at 32 °F and boils at 212 °F', () => {
  assert.equal(toFahrenheit(0), 32);
  assert.equal(toFahrenheit(100), 212);
  assert.equal(toFahrenheit(-40), -40);
});
