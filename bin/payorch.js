#!/usr/bin/env node
'use strict';
// Runs the TypeScript sources directly (type-checking is CI's job, not start-up's).
const path = require('node:path');
require('ts-node').register({ transpileOnly: true, project: path.join(__dirname, '..', 'tsconfig.json') });
require('../src/cli.ts').main(process.argv);
