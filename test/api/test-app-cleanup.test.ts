import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp } from '../helpers/app';

describe('test app helper', () => {
  it('should leave no directory behind in the temp dir once the app is stopped', async () => {
    const app = await startTestApp();
    const dataDir = app.config.dataDir;
    expect(fs.existsSync(path.join(dataDir, 'tls', 'cert.pem'))).toBe(true);
    await app.stop();
    expect(fs.existsSync(dataDir)).toBe(false);
    // The per-process directory the helper used to keep (other test runs may share the temp dir,
    // so only this process's names are checked).
    expect(fs.existsSync(path.join(os.tmpdir(), `payorch-test-tls-${process.pid}`))).toBe(false);
  });
});
