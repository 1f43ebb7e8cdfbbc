#!/usr/bin/env node
'use strict';
// Runs the compiled service in dist/, compiling it first when it is missing or was built from
// other sources (scripts/build.js): the TypeScript compiler loaded into every instance cost about
// 100 MB of RSS. PAYORCH_FROM_SOURCE=1 runs the TypeScript sources through ts-node instead, with
// no build and no type-check: tests and development (`npm run dev`).
const path = require('node:path');

if (process.env.PAYORCH_FROM_SOURCE === '1') {
  require('ts-node').register({ transpileOnly: true, project: path.join(__dirname, '..', 'tsconfig.json') });
  require('../src/cli.ts').main(process.argv);
} else {
  try {
    require('../scripts/build').ensureBuilt();
  } catch (err) {
    process.stderr.write(`payorch: could not compile the sources: ${err.message}\n`);
    process.exit(1);
  }
  require('../dist/src/cli.js').main(process.argv);
}
