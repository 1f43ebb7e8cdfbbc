import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { apiDocumentText } from '../rest/routes';

// Writes docs/openapi.json from the route table; test/unit/openapi-document.test.ts fails when stale.
fs.writeFileSync(path.join(__dirname, '..', 'docs', 'openapi.json'), apiDocumentText());
process.stdout.write('docs/openapi.json written\n');
