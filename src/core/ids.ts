import { randomFillSync } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export type IdPrefix =
  | 'acct' | 'key' | 'cus' | 'pay' | 're' | 'cs' | 'sub' | 'in' | 'plink' | 'we' | 'evt'
  | 'prod' | 'price' | 'gw' | 'pm' | 'gtx' | 'clock' | 'whd' | 'req' | 'il' | 'spl' | 'cbtxn' | 'txr' | 'exp';

// Random bytes are drawn from the CSPRNG in blocks: one system call per few dozen ids rather
// than one per id (each call is a kernel round trip on the request path).
const POOL = Buffer.alloc(4096);
let poolOffset = POOL.length;

/** `n` bytes of CSPRNG output, copied out of the block (each byte is handed out once). */
export function secureRandomBytes(n: number): Buffer {
  if (n > POOL.length) return randomFillSync(Buffer.alloc(n));
  if (poolOffset + n > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  const out = Buffer.from(POOL.subarray(poolOffset, poolOffset + n));
  POOL.fill(0, poolOffset, poolOffset + n);
  poolOffset += n;
  return out;
}

/**
 * Uniform base62 string; rejection sampling keeps every character equally likely. Written into
 * one buffer: a string built a character at a time is a chain of pieces that costs over 400
 * bytes for every id an object keeps.
 */
export function randomBase62(length: number): string {
  const out = Buffer.allocUnsafe(length);
  let n = 0;
  while (n < length) {
    const bytes = secureRandomBytes(length + 8);
    for (const b of bytes) {
      if (b < 248) out[n++] = BASE62.charCodeAt(b % 62);
      if (n === length) break;
    }
  }
  return out.toString('latin1');
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(24)}`;
}
