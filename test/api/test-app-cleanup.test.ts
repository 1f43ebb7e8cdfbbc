import fs from 'node:fs';
import path from 'node:path';
import { startTestApp } from '../helpers/app';

describe('test app helper', () => {
  it('should leave no directory behind in the temp dir once the app is stopped', async () => {
    const app = await startTestApp();
    const dataDir = app.config.dataDir;
    expect(fs.existsSync(path.join(dataDir, 'tls', 'cert.pem'))).toBe(true);
    await app.stop();
    expect(fs.existsSync(dataDir)).toBe(false);
  });
});
