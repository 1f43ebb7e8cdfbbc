import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ensurePrivateDir } from './private-files';

/**
 * Secrets at rest (gateway credentials, webhook secrets, …).
 *
 * - One 32-byte master key: `ENCRYPTION_KEY` (64 hex chars or base64 of 32 bytes), or in
 *   development a random key generated once into `<dataDir>/encryption.key` (mode 0600).
 * - `SecretBox` seals JSON values with AES-256-GCM, a fresh random 96-bit IV per message.
 * - `deriveKey` gives independent sub-keys (HKDF-SHA256) so e.g. the card fingerprint key
 *   is never the encryption key itself.
 */

export const KEY_BYTES = 32;
export const DEV_KEY_FILE = 'encryption.key';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';
/** Binds the format version into the authentication tag (AAD). */
const AAD = Buffer.from(`payorch.secretbox.${VERSION}`, 'utf8');
const HKDF_SALT = Buffer.from('payorch.hkdf.v1', 'utf8');

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const BASE64_KEY = /^[A-Za-z0-9+/]{43}=?$/;
const BASE64URL_KEY = /^[A-Za-z0-9_-]{43}=?$/;
const B64URL = /^[A-Za-z0-9_-]*$/;

/** Thrown when a sealed secret cannot be opened: malformed, tampered with, or another key. */
export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

/**
 * Parses an explicit key: 64 hex characters, or base64 / base64url of exactly 32 bytes
 * (padding optional). Anything else throws, so a typo never silently becomes a weak key.
 */
export function parseEncryptionKey(value: string): Buffer {
  const v = value.trim();
  if (HEX_KEY.test(v)) return Buffer.from(v, 'hex');
  if (BASE64_KEY.test(v) || BASE64URL_KEY.test(v)) {
    const normalized = v.replace(/=$/, '').replace(/\+/g, '-').replace(/\//g, '_');
    const key = Buffer.from(normalized, 'base64url');
    // The round trip rejects encodings whose unused trailing bits are set.
    if (key.length === KEY_BYTES && key.toString('base64url') === normalized) return key;
  }
  throw new Error('ENCRYPTION_KEY must be 32 bytes as 64 hex characters or base64');
}

/**
 * The master key. With `encryptionKey` set it is parsed (hex or base64). Otherwise a dev key
 * lives in `<dataDir>/encryption.key`: created once (mode 0600, written atomically so
 * concurrent starters agree on one key) and read back on every later call.
 */
export function loadEncryptionKey(opts: { encryptionKey?: string; dataDir: string }): Buffer {
  if (opts.encryptionKey !== undefined && opts.encryptionKey.trim() !== '') {
    return parseEncryptionKey(opts.encryptionKey);
  }
  const file = path.join(opts.dataDir, DEV_KEY_FILE);
  const existing = readKeyFile(file);
  if (existing) return existing;

  ensurePrivateDir(opts.dataDir);
  const key = randomBytes(KEY_BYTES);
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    fs.writeFileSync(tmp, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    fs.chmodSync(tmp, 0o600); // in case the umask was unusual
    try {
      // link() fails if the file exists, so the first writer wins and the file is never partial.
      fs.linkSync(tmp, file);
      return key;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  const winner = readKeyFile(file);
  if (!winner) throw new Error(`Could not read ${file}`);
  return winner;
}

function readKeyFile(file: string): Buffer | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    return parseEncryptionKey(text);
  } catch {
    throw new Error(`${file} does not hold a valid 32-byte key (64 hex characters)`);
  }
}

/** HKDF-SHA256 sub-key for one purpose ("card-fingerprint", …); 32 bytes, independent of `key`. */
export function deriveKey(key: Buffer, purpose: string): Buffer {
  if (!Buffer.isBuffer(key) || key.length < 16) throw new Error('deriveKey needs a key of at least 16 bytes');
  if (typeof purpose !== 'string' || purpose.length === 0) throw new Error('deriveKey needs a purpose');
  return Buffer.from(hkdfSync('sha256', key, HKDF_SALT, Buffer.from(purpose, 'utf8'), KEY_BYTES));
}

/**
 * Authenticated encryption of JSON values:
 * `v1.<iv b64url>.<tag b64url>.<ciphertext b64url>` (AES-256-GCM, 12-byte IV, 16-byte tag).
 * `open` throws SecretBoxError on any modification, a wrong key or an unknown version.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) {
      throw new Error(`SecretBox needs a ${KEY_BYTES}-byte key`);
    }
    this.key = Buffer.from(key); // private copy: later changes to the caller's buffer don't leak in
  }

  seal(plain: unknown): string {
    const json = JSON.stringify(plain);
    if (json === undefined) throw new TypeError('SecretBox can only seal JSON values');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(AAD);
    const ciphertext = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [VERSION, iv.toString('base64url'), tag.toString('base64url'), ciphertext.toString('base64url')].join('.');
  }

  open<T = unknown>(sealed: string): T {
    if (typeof sealed !== 'string') throw new SecretBoxError('sealed secret must be a string');
    const parts = sealed.split('.');
    if (parts.length !== 4) throw new SecretBoxError('sealed secret is malformed');
    const [version, ivText, tagText, ctText] = parts;
    if (version !== VERSION) throw new SecretBoxError(`unsupported sealed secret version '${version.slice(0, 8)}'`);
    const iv = decodeB64url(ivText);
    const tag = decodeB64url(tagText);
    const ciphertext = decodeB64url(ctText);
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES || ciphertext.length === 0) {
      throw new SecretBoxError('sealed secret is malformed');
    }
    let json: string;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(AAD);
      decipher.setAuthTag(tag);
      json = Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretBoxError('sealed secret failed authentication (tampered with or wrong key)');
    }
    return JSON.parse(json) as T;
  }
}

/** Strict base64url: only canonical encodings, so no two strings open to the same bytes. */
function decodeB64url(text: string): Buffer {
  if (!B64URL.test(text)) throw new SecretBoxError('sealed secret is malformed');
  const buf = Buffer.from(text, 'base64url');
  if (buf.toString('base64url') !== text) throw new SecretBoxError('sealed secret is malformed');
  return buf;
}
