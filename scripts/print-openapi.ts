import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { apiDocumentText } from '../rest/routes';
import { CLIENT_TYPES_FILE, generateClientTypes } from './client-types';

// Writes docs/openapi.json from the route table, and the typed client's types generated from it
// (examples/payorch-api.d.ts); test/unit/openapi-document.test.ts fails when either is stale.
fs.writeFileSync(path.join(__dirname, '..', 'docs', 'openapi.json'), apiDocumentText());
process.stdout.write('docs/openapi.json written\n');
generateClientTypes();
process.stdout.write(`${path.relative(process.cwd(), CLIENT_TYPES_FILE)} written\n`);
