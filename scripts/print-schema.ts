import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { printPayorchSchema } from '../schema/build';

// Writes schema/schema.graphql from the code; test/graphql/schema-file.test.ts fails when stale.
fs.writeFileSync(path.join(__dirname, '..', 'schema', 'schema.graphql'), printPayorchSchema());
process.stdout.write('schema/schema.graphql written\n');
