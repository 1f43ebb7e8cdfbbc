import fs from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';
import { ensurePrivateDir } from './core/private-files';

export interface TlsMaterial {
  cert: string;
  key: string;
  selfSigned: boolean;
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
