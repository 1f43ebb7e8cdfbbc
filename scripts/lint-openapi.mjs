// Lints an OpenAPI document with Redocly's recommended rules and prints the problems as JSON
// (run as a child process: @redocly/openapi-core is ESM-only, the jest suite is CommonJS).
// Usage: node scripts/lint-openapi.mjs docs/openapi.json
import fs from 'node:fs';
import path from 'node:path';
import { createConfig, lintFromString } from '@redocly/openapi-core';

const file = path.resolve(process.argv[2] ?? 'docs/openapi.json');
const config = await createConfig({ extends: ['recommended'] });
const problems = await lintFromString({ source: fs.readFileSync(file, 'utf8'), absoluteRef: file, config });
process.stdout.write(JSON.stringify(problems.map((p) => ({
  severity: p.severity, rule: p.ruleId, message: p.message, where: p.location?.[0]?.pointer,
}))));
