#!/usr/bin/env node
import { main } from './main';
import { guardPipes } from './io';

guardPipes();

void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
