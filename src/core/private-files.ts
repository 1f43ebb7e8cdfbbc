import fs from 'node:fs';
import path from 'node:path';

/**
 * Owner-only modes for what the service keeps on disk: the SQLite database (customers' e-mails,
 * payments), the development encryption key and the TLS key.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Creates `dir`, and any parent that is missing, 0700. A directory that already exists keeps its
 * mode: it may be a mount point or shared with other software, which is the operator's call.
 */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Makes `file` 0600 when others may read or write it; true when it changed it. A file that is
 * missing, or that this user may not change (another owner), is left as it is.
 */
export function tightenFile(file: string): boolean {
  try {
    if ((fs.statSync(file).mode & 0o077) === 0) return false;
    fs.chmodSync(file, PRIVATE_FILE_MODE);
    return true;
  } catch {
    return false;
  }
}

/**
 * Before SQLite opens `file`: its directory exists (0700 when created here) and the file exists
 * 0600, since SQLite gives its -wal, -shm and -journal files the database file's mode (an empty
 * file is a new database to SQLite). Database files an earlier version left readable by others
 * are tightened to 0600; returns those.
 */
export function prepareSqliteFile(file: string): string[] {
  ensurePrivateDir(path.dirname(file));
  try {
    const fd = fs.openSync(file, 'wx', PRIVATE_FILE_MODE);
    try {
      fs.fchmodSync(fd, PRIVATE_FILE_MODE); // in case the umask took the owner's write bit
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return [file, `${file}-wal`, `${file}-shm`, `${file}-journal`].filter(tightenFile);
}
