import path from 'node:path';
import semver from 'semver';

const ROOT = path.join(__dirname, '..', '..');
const pkg = require(path.join(ROOT, 'package.json')) as { engines: { node: string } };
const lock = require(path.join(ROOT, 'package-lock.json')) as { packages: Record<string, { engines?: { node?: string } | string[] }> };

describe('engines', () => {
  it('should let every locked dependency run on the oldest Node.js package.json allows, and on this one', () => {
    const oldest = semver.minVersion(pkg.engines.node)!.version;
    expect(lock.packages[''].engines).toEqual(pkg.engines);
    const refused: string[] = [];
    for (const [name, entry] of Object.entries(lock.packages)) {
      const wanted = !Array.isArray(entry.engines) ? entry.engines?.node : undefined;
      if (!name || !wanted) continue;
      for (const version of [oldest, process.version]) if (!semver.satisfies(version, wanted)) refused.push(`${name} needs ${wanted}, not ${version}`);
    }
    expect(refused).toEqual([]);
  });
});
