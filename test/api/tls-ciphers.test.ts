import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { generate } from 'selfsigned';
import { startTestApp, type TestApp } from '../helpers/app';

/** Connects with exactly the given TLS 1.2 suites (or TLS 1.3); resolves with the suite agreed or the failure. */
function handshake(app: TestApp, opts: { ciphers?: string; version?: tls.SecureVersion }): Promise<string> {
  const { port } = new URL(app.baseUrl);
  const version = opts.version ?? 'TLSv1.2';
  return new Promise((resolve) => {
    const socket = tls.connect(
      { host: '127.0.0.1', port: Number(port), servername: 'localhost', ca: app.server.cert, minVersion: version, maxVersion: version, ciphers: opts.ciphers },
      () => {
        const agreed = socket.getCipher().standardName;
        socket.destroy();
        resolve(agreed);
      },
    );
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(`refused: ${err.code ?? err.message}`));
  });
}

describe('TLS suites with the generated P-256 certificate', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.stop());

  it('should refuse a TLS 1.2 client offering only CBC suites with SHA-1 or SHA-2 MACs', async () => {
    for (const cipher of ['ECDHE-ECDSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA', 'ECDHE-ECDSA-AES128-SHA256', 'ECDHE-ECDSA-AES256-SHA384']) {
      expect([cipher, await handshake(app, { ciphers: cipher })]).toEqual([cipher, expect.stringMatching(/^refused: /)]);
    }
  });

  it('should agree TLS 1.2 ECDHE with AES-GCM or ChaCha20-Poly1305, and TLS 1.3', async () => {
    expect(await handshake(app, { ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' })).toBe('TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256');
    expect(await handshake(app, { ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384' })).toBe('TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384');
    expect(await handshake(app, { ciphers: 'ECDHE-ECDSA-CHACHA20-POLY1305' })).toBe('TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256');
    expect(await handshake(app, { version: 'TLSv1.3' })).toMatch(/^TLS_(AES_(128|256)_GCM|CHACHA20_POLY1305)_SHA(256|384)$/);
  });

  it('should pick an AEAD suite for a client offering every suite it knows', async () => {
    expect(await handshake(app, { ciphers: 'ALL' })).toMatch(/_(GCM|POLY1305)_/);
  });

  it('should refuse TLS 1.1', async () => {
    expect(await handshake(app, { version: 'TLSv1.1', ciphers: 'ALL:@SECLEVEL=0' })).toMatch(/^refused: /);
  });
});

describe('TLS suites with a configured RSA certificate', () => {
  let app: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-rsa-'));
    const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'rsa',
      keySize: 2048,
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }],
    } as never);
    fs.writeFileSync(path.join(dir, 'cert.pem'), pems.cert);
    fs.writeFileSync(path.join(dir, 'key.pem'), pems.private, { mode: 0o600 });
    app = await startTestApp({ env: { TLS_CERT_FILE: path.join(dir, 'cert.pem'), TLS_KEY_FILE: path.join(dir, 'key.pem') } });
  });
  afterAll(async () => {
    await app?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('should refuse TLS 1.2 RSA CBC suites and agree RSA AES-GCM and ChaCha20', async () => {
    for (const cipher of ['ECDHE-RSA-AES128-SHA', 'ECDHE-RSA-AES256-SHA', 'ECDHE-RSA-AES128-SHA256', 'ECDHE-RSA-AES256-SHA384', 'AES128-GCM-SHA256', 'DHE-RSA-AES128-GCM-SHA256']) {
      expect([cipher, await handshake(app, { ciphers: cipher })]).toEqual([cipher, expect.stringMatching(/^refused: /)]);
    }
    expect(await handshake(app, { ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' })).toBe('TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256');
    expect(await handshake(app, { ciphers: 'ECDHE-RSA-CHACHA20-POLY1305' })).toBe('TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256');
  });
});
