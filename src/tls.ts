import fs from 'node:fs';
import path from 'node:path';
import type { SecureContextOptions, TlsOptions } from 'node:tls';
import { generate } from 'selfsigned';
import { ensurePrivateDir } from './core/private-files';

export interface TlsMaterial {
  cert: string;
  key: string;
  selfSigned: boolean;
}

/**
 * AEAD suites only: TLS 1.3's, and for TLS 1.2 ECDHE with AES-GCM or ChaCha20-Poly1305 (forward
 * secrecy, no CBC, no SHA-1 MAC). Both ECDSA and RSA variants, so a configured RSA certificate
 * works as well as the generated P-256 one. Node's default list also admits `HIGH`, which brings
 * in the CBC suites (ECDHE-ECDSA-AES128-SHA, …).
 */
export const TLS_CIPHERS = [
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_GCM_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** What the HTTPS listener offers: TLS 1.2 and 1.3 with the suites above, in our order. */
export function tlsServerOptions(material: Pick<TlsMaterial, 'cert' | 'key'>): TlsOptions & SecureContextOptions {
  return { cert: material.cert, key: material.key, minVersion: 'TLSv1.2', ciphers: TLS_CIPHERS, honorCipherOrder: true };
}

/** Configured files win; otherwise a self-signed pair is made once and kept in the data dir. */
export async function loadTls(opts: { certFile?: string; keyFile?: string; dataDir: string }): Promise<TlsMaterial> {
  if (opts.certFile && opts.keyFile) {
    return { cert: fs.readFileSync(opts.certFile, 'utf8'), key: fs.readFileSync(opts.keyFile, 'utf8'), selfSigned: false };
  }
  const dir = path.join(opts.dataDir, 'tls');
  const certPath = path.join(dir, 'cert.pem');
  const keyPath = path.join(dir, 'key.pem');
  if (fs.existsSync(certPath) && fs.existsSync(keyPath)) {
    return { cert: fs.readFileSync(certPath, 'utf8'), key: fs.readFileSync(keyPath, 'utf8'), selfSigned: true };
  }
  const pems = await generateSelfSigned();
  ensurePrivateDir(dir);
  fs.writeFileSync(keyPath, pems.key, { mode: 0o600 });
  fs.writeFileSync(certPath, pems.cert);
  return { ...pems, selfSigned: true };
}

export async function generateSelfSigned(): Promise<{ cert: string; key: string }> {
  const notAfterDate = new Date(Date.now() + 825 * 86_400_000);
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
    ],
  } as never);
  return { cert: pems.cert, key: pems.private };
}
