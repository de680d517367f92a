import test from 'node:test';
import assert from 'node:assert/strict';
import { wordCount } from '../src/word-count.mjs';

test('counts words separated by any run of white space', () => {
  assert.equal(wordCount(''), 0);
  assert.equal(wordCount('  one  '), 1);
  assert.equal(wordCount('one two\tthree\nfour'), 4);
});
