import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..');

/** Where the typed client example keeps the types generated from docs/openapi.json. */
export const CLIENT_TYPES_FILE = path.join(ROOT, 'examples', 'payorch-api.d.ts');

/**
 * Writes the TypeScript types of docs/openapi.json with openapi-typescript (its CLI: the package
 * is ESM-only). `--default-non-nullable false`: a body field with a default (a subscription's
 * quantity) stays optional, as the document's `required` says, instead of becoming required.
 */
export function generateClientTypes(outFile = CLIENT_TYPES_FILE, document = path.join(ROOT, 'docs', 'openapi.json')): void {
  const cli = path.join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
  const run = spawnSync(process.execPath, [cli, document, '--default-non-nullable', 'false', '--output', outFile], { encoding: 'utf8', cwd: ROOT });
  if (run.status !== 0) throw new Error(`openapi-typescript failed: ${run.stderr || run.stdout}`);
}
