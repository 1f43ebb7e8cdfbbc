#!/usr/bin/env node
'use strict';
// Compiles the service (src, rest, schema, workers) with tsc into dist/, stamped with a digest
// of the sources it was built from. bin/payorch.js runs dist/ and rebuilds it first when the
// stamp does not match the sources as they are now, so an edited tree is never served stale.
//
//   npm run build        # rebuild dist/ now
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const STAMP = '.sources-sha256';
// Everything tsc reads for the build besides node_modules.
const INPUTS = ['src', 'rest', 'schema', 'workers', 'tsconfig.json', 'tsconfig.build.json'];

/** Digest of the build's inputs: names and contents, so an added, removed or edited file counts. */
function sourcesDigest(root = ROOT) {
  const hash = crypto.createHash('sha256');
  const walk = (rel) => {
    const abs = path.join(root, rel);
    if (fs.statSync(abs).isDirectory()) {
      for (const name of fs.readdirSync(abs).sort()) walk(path.posix.join(rel, name));
      return;
    }
    const content = fs.readFileSync(abs);
    hash.update(`${rel}\0${content.length}\0`);
    hash.update(content);
  };
  for (const input of INPUTS) walk(input);
  return hash.digest('hex');
}

/** Whether `dist` holds a build of the current sources. */
function isBuilt(root = ROOT, dist = path.join(root, 'dist')) {
  let stamp;
  try {
    stamp = fs.readFileSync(path.join(dist, STAMP), 'utf8').trim();
  } catch {
    return false;
  }
  return stamp === sourcesDigest(root);
}

/**
 * Compiles into a fresh directory next to dist/ and only then puts it in dist/'s place, so a
 * failed build or a second instance building at the same time never leaves a half-written
 * dist/ for anyone to run. Throws when tsc reports errors (printed on stderr).
 */
function build({ outDir = DIST } = {}) {
  const digest = sourcesDigest();
  const tmp = fs.mkdtempSync(path.join(ROOT, '.dist-'));
  try {
    const tsc = require.resolve('typescript/bin/tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', tmp], {
      cwd: ROOT,
      stdio: ['ignore', 2, 2],
    });
    if (result.status !== 0) throw new Error(`tsc failed (${result.error?.message ?? `exit ${result.status ?? result.signal}`})`);
    fs.writeFileSync(path.join(tmp, STAMP), `${digest}\n`);
    fs.rmSync(outDir, { recursive: true, force: true });
    try {
      fs.renameSync(tmp, outDir);
    } catch (err) {
      // Another instance put its build there first; it is of the same sources or newer ones.
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Builds dist/ unless it already holds a build of the current sources. */
function ensureBuilt() {
  if (isBuilt()) return;
  process.stderr.write('payorch: compiling to dist/ (missing or built from other sources)\n');
  build();
}

module.exports = { ROOT, DIST, INPUTS, sourcesDigest, isBuilt, build, ensureBuilt };

if (require.main === module) {
  try {
    build();
  } catch (err) {
    process.stderr.write(`payorch: ${err.message}\n`);
    process.exit(1);
  }
}
