import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  DEV_KEY_FILE,
  SecretBox,
  SecretBoxError,
  deriveKey,
  loadEncryptionKey,
  parseEncryptionKey,
} from '../../../src/core/crypto';

const tmpDirs: string[] = [];
function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-crypto-'));
  tmpDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tmpDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** Decodes one base64url part, flips a bit, re-encodes it. */
function flipPart(sealed: string, index: number, byte = 0): string {
  const parts = sealed.split('.');
  const buf = Buffer.from(parts[index], 'base64url');
  buf[byte] ^= 0x01;
  parts[index] = buf.toString('base64url');
  return parts.join('.');
}

describe('SecretBox', () => {
  const key = randomBytes(32);
  const box = new SecretBox(key);

  it.each<[string, unknown]>([
    ['an object', { apiKey: 'sk_test_123', nested: { list: [1, 2, 3], ok: true } }],
    ['a string', 'whsec_abcdef'],
    ['a number', 42.5],
    ['null', null],
    ['an array', ['a', { b: 'c' }]],
    ['unicode text', { name: 'Zürich – 東京 – 🔑' }],
    ['an empty object', {}],
  ])('should round-trip %s', (_label, value) => {
    expect(box.open(box.seal(value))).toEqual(value);
  });

  it('should output the versioned compact format v1.<iv>.<tag>.<ciphertext>', () => {
    const sealed = box.seal({ a: 1 });
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    const [, iv, tag] = sealed.split('.');
    expect(Buffer.from(iv, 'base64url')).toHaveLength(12);
    expect(Buffer.from(tag, 'base64url')).toHaveLength(16);
  });

  it('should use a fresh random IV for every message', () => {
    const a = box.seal('same');
    const b = box.seal('same');
    expect(a).not.toBe(b);
    expect(a.split('.')[1]).not.toBe(b.split('.')[1]);
  });

  it('should not contain the plaintext in the sealed string', () => {
    const sealed = box.seal({ secret: 'sk_live_SUPERSECRET' });
    expect(sealed).not.toContain('SUPERSECRET');
    expect(Buffer.from(sealed.split('.')[3], 'base64url').toString('utf8')).not.toContain('SUPERSECRET');
  });

  it('should give typed results through open<T>', () => {
    const creds = box.open<{ apiKey: string }>(box.seal({ apiKey: 'k' }));
    expect(creds.apiKey).toBe('k');
  });

  describe('tamper detection', () => {
    const sealed = box.seal({ apiKey: 'sk_test_123' });

    it('should throw when a ciphertext byte is changed', () => {
      expect(() => box.open(flipPart(sealed, 3))).toThrow(SecretBoxError);
      expect(() => box.open(flipPart(sealed, 3, 5))).toThrow(SecretBoxError);
    });

    it('should throw when the tag is changed', () => {
      expect(() => box.open(flipPart(sealed, 2))).toThrow(SecretBoxError);
      expect(() => box.open(flipPart(sealed, 2, 15))).toThrow(SecretBoxError);
    });

    it('should throw when the IV is changed', () => {
      expect(() => box.open(flipPart(sealed, 1))).toThrow(SecretBoxError);
    });

    it('should throw when any single character of the string is changed', () => {
      for (let i = 3; i < sealed.length; i++) {
        if (sealed[i] === '.') continue;
        const replacement = sealed[i] === 'A' ? 'B' : 'A';
        const tampered = sealed.slice(0, i) + replacement + sealed.slice(i + 1);
        expect(() => box.open(tampered)).toThrow(SecretBoxError);
      }
    });

    it('should throw when the ciphertext is truncated or extended', () => {
      const parts = sealed.split('.');
      const ct = Buffer.from(parts[3], 'base64url');
      const shorter = [...parts.slice(0, 3), ct.subarray(0, ct.length - 1).toString('base64url')].join('.');
      const longer = [...parts.slice(0, 3), Buffer.concat([ct, Buffer.from([0])]).toString('base64url')].join('.');
      expect(() => box.open(shorter)).toThrow(SecretBoxError);
      expect(() => box.open(longer)).toThrow(SecretBoxError);
    });

    it('should throw when parts of two messages are mixed', () => {
      const other = box.seal({ apiKey: 'sk_test_456' }).split('.');
      const parts = sealed.split('.');
      expect(() => box.open([parts[0], parts[1], parts[2], other[3]].join('.'))).toThrow(SecretBoxError);
      expect(() => box.open([parts[0], other[1], parts[2], parts[3]].join('.'))).toThrow(SecretBoxError);
    });

    it('should throw with a different key', () => {
      expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow(SecretBoxError);
    });

    it('should throw on an unknown version', () => {
      expect(() => box.open(sealed.replace(/^v1\./, 'v2.'))).toThrow(/version/);
    });

    it.each([
      ['an empty string', ''],
      ['too few parts', 'v1.abc.def'],
      ['too many parts', `${sealed}.extra`],
      ['non-base64url characters', sealed.replace(/\.([^.]+)$/, '.+/+/')],
      ['an empty ciphertext', sealed.replace(/\.[^.]+$/, '.')],
      ['garbage', 'not a sealed secret'],
    ])('should throw on %s', (_label, input) => {
      expect(() => box.open(input)).toThrow(SecretBoxError);
    });

    it('should throw on a non-string input', () => {
      expect(() => box.open(42 as unknown as string)).toThrow(SecretBoxError);
    });
  });

  it('should refuse to seal values that are not JSON', () => {
    expect(() => box.seal(undefined)).toThrow(TypeError);
    expect(() => box.seal(() => 1)).toThrow(TypeError);
    expect(() => box.seal(10n)).toThrow(TypeError);
  });

  it('should refuse keys that are not 32 bytes', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32-byte/);
    expect(() => new SecretBox(randomBytes(33))).toThrow(/32-byte/);
    expect(() => new SecretBox('x'.repeat(32) as unknown as Buffer)).toThrow(/32-byte/);
  });

  it('should keep working when the caller later overwrites its key buffer', () => {
    const k = randomBytes(32);
    const b = new SecretBox(k);
    const sealed = b.seal('v');
    const copy = Buffer.from(k);
    k.fill(0);
    expect(b.open(sealed)).toBe('v');
    expect(new SecretBox(copy).open(sealed)).toBe('v');
  });
});

describe('loadEncryptionKey', () => {
  const raw = randomBytes(32);

  it('should accept 64 hex characters', () => {
    const dir = tmpDir();
    expect(loadEncryptionKey({ encryptionKey: raw.toString('hex'), dataDir: dir }).equals(raw)).toBe(true);
    expect(loadEncryptionKey({ encryptionKey: raw.toString('hex').toUpperCase(), dataDir: dir }).equals(raw)).toBe(true);
  });

  it('should accept base64 of 32 bytes, with or without padding', () => {
    const dir = tmpDir();
    const b64 = raw.toString('base64');
    expect(b64).toMatch(/=$/);
    expect(loadEncryptionKey({ encryptionKey: b64, dataDir: dir }).equals(raw)).toBe(true);
    expect(loadEncryptionKey({ encryptionKey: b64.replace(/=$/, ''), dataDir: dir }).equals(raw)).toBe(true);
  });

  it('should accept base64url of 32 bytes', () => {
    const key = Buffer.alloc(32, 0xfb); // encodes with '-' / '_' in base64url, '+' / '/' in base64
    expect(key.toString('base64')).toMatch(/[+/]/);
    expect(parseEncryptionKey(key.toString('base64url')).equals(key)).toBe(true);
    expect(parseEncryptionKey(key.toString('base64')).equals(key)).toBe(true);
  });

  it('should ignore surrounding whitespace', () => {
    expect(parseEncryptionKey(`  ${raw.toString('hex')}\n`).equals(raw)).toBe(true);
  });

  it('should not create a key file when a key is given', () => {
    const dir = tmpDir();
    loadEncryptionKey({ encryptionKey: raw.toString('hex'), dataDir: dir });
    expect(fs.existsSync(path.join(dir, DEV_KEY_FILE))).toBe(false);
  });

  it.each([
    ['63 hex characters', 'a'.repeat(63)],
    ['65 hex characters', 'a'.repeat(65)],
    ['non-hex characters', 'g'.repeat(64)],
    ['base64 of 31 bytes', randomBytes(31).toString('base64')],
    ['base64 of 33 bytes', randomBytes(33).toString('base64')],
    ['a passphrase', 'correct horse battery staple'],
    ['non-canonical base64 (trailing bits set)', `${'A'.repeat(42)}B=`],
  ])('should reject %s', (_label, value) => {
    expect(() => loadEncryptionKey({ encryptionKey: value, dataDir: tmpDir() })).toThrow(/ENCRYPTION_KEY/);
  });

  it('should generate a dev key once, persist it with mode 0600 and reuse it', () => {
    const dir = path.join(tmpDir(), 'nested', 'data');
    const first = loadEncryptionKey({ dataDir: dir });
    expect(first).toHaveLength(32);

    const file = path.join(dir, DEV_KEY_FILE);
    expect(fs.existsSync(file)).toBe(true);
    if (process.platform !== 'win32') {
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    }
    expect(fs.readFileSync(file, 'utf8').trim()).toBe(first.toString('hex'));

    const second = loadEncryptionKey({ dataDir: dir });
    expect(second.equals(first)).toBe(true);
    expect(fs.readdirSync(dir)).toEqual([DEV_KEY_FILE]); // no temp files left behind
  });

  it('should open secrets sealed before a restart with the reloaded dev key', () => {
    const dir = tmpDir();
    const sealed = new SecretBox(loadEncryptionKey({ dataDir: dir })).seal({ token: 't' });
    expect(new SecretBox(loadEncryptionKey({ dataDir: dir })).open(sealed)).toEqual({ token: 't' });
  });

  it('should treat an empty ENCRYPTION_KEY as unset', () => {
    const dir = tmpDir();
    const key = loadEncryptionKey({ encryptionKey: '', dataDir: dir });
    expect(loadEncryptionKey({ dataDir: dir }).equals(key)).toBe(true);
  });

  it('should give different data dirs different dev keys', () => {
    expect(loadEncryptionKey({ dataDir: tmpDir() }).equals(loadEncryptionKey({ dataDir: tmpDir() }))).toBe(false);
  });

  it('should keep using an existing key file written by someone else', () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, DEV_KEY_FILE), `${raw.toString('hex')}\n`, { mode: 0o600 });
    expect(loadEncryptionKey({ dataDir: dir }).equals(raw)).toBe(true);
  });

  it('should refuse a corrupt key file instead of replacing it', () => {
    const dir = tmpDir();
    const file = path.join(dir, DEV_KEY_FILE);
    fs.writeFileSync(file, 'not a key');
    expect(() => loadEncryptionKey({ dataDir: dir })).toThrow(/valid 32-byte key/);
    expect(fs.readFileSync(file, 'utf8')).toBe('not a key');
  });
});

describe('deriveKey', () => {
  const master = randomBytes(32);

  it('should return 32 bytes that differ from the master key', () => {
    const derived = deriveKey(master, 'card-fingerprint');
    expect(derived).toHaveLength(32);
    expect(derived.equals(master)).toBe(false);
  });

  it('should be deterministic for the same key and purpose', () => {
    expect(deriveKey(master, 'card-fingerprint').equals(deriveKey(master, 'card-fingerprint'))).toBe(true);
  });

  it('should give different keys for different purposes', () => {
    expect(deriveKey(master, 'card-fingerprint').equals(deriveKey(master, 'webhook-secrets'))).toBe(false);
  });

  it('should give different keys for different master keys', () => {
    expect(deriveKey(master, 'card-fingerprint').equals(deriveKey(randomBytes(32), 'card-fingerprint'))).toBe(false);
  });

  it('should produce keys usable by SecretBox', () => {
    const box = new SecretBox(deriveKey(master, 'gateway-credentials'));
    expect(box.open(box.seal({ a: 1 }))).toEqual({ a: 1 });
  });

  it('should reject an empty purpose or a short key', () => {
    expect(() => deriveKey(master, '')).toThrow(/purpose/);
    expect(() => deriveKey(randomBytes(8), 'x')).toThrow(/16 bytes/);
  });
});
