/**
 * `npm run screenshot -- <path|url> [file.png] [--width 360] [--height 800]`: opens a page of the
 * running service in headless Chromium and saves a PNG of the whole page.
 *
 * The service is PAYORCH_URL (default https://localhost:$PORT, PORT 8443). Chromium trusts its
 * certificate, and only it: TLS_CERT_FILE, else the one `npm start` generated in
 * $DATA_DIR/tls/cert.pem (DATA_DIR defaults to ./data). It prints the answer's status and any
 * console error or CSP violation the page reported, and exits 1 when the page could not be loaded.
 */
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium, watchProblems } from './chromium';

interface Options {
  target: string;
  file: string;
  width: number;
  height: number;
}

const USAGE = 'usage: npm run screenshot -- <path|url> [file.png] [--width 360] [--height 800]';

function parseArgs(argv: string[]): Options {
  const positional: string[] = [];
  const sizes: Record<string, number> = { width: 1280, height: 800 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const flag = /^--(width|height)(?:=(.*))?$/.exec(arg);
    if (flag) {
      const value = flag[2] ?? argv[++i];
      const n = Number(value);
      if (!Number.isInteger(n) || n < 200 || n > 4000) throw new Error(`--${flag[1]} must be a whole number of pixels from 200 to 4000`);
      sizes[flag[1]] = n;
    } else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else if (arg.startsWith('--')) {
      throw new Error(`unknown option ${arg}\n${USAGE}`);
    } else {
      positional.push(arg);
    }
  }
  if (positional.length < 1 || positional.length > 2) throw new Error(USAGE);
  return { target: positional[0], file: positional[1] ?? 'screenshot.png', width: sizes.width, height: sizes.height };
}

function certificate(): string {
  const file = process.env.TLS_CERT_FILE ?? path.join(process.env.DATA_DIR ?? 'data', 'tls', 'cert.pem');
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    throw new Error(`cannot read the service's certificate at ${file}: start the service once (npm start) or set TLS_CERT_FILE`);
  }
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const base = process.env.PAYORCH_URL ?? `https://localhost:${process.env.PORT ?? '8443'}`;
  const url = new URL(opts.target, base).toString();
  const browser = await launchChromium({ trustCertPem: certificate() });
  try {
    const context = await browser.newContext({ viewport: { width: opts.width, height: opts.height } });
    const problems = await watchProblems(context);
    const page = await context.newPage();
    const response = await page.goto(url, { waitUntil: 'load' });
    await page.screenshot({ path: opts.file, fullPage: true });
    console.log(`${url} → ${response?.status() ?? 'no answer'}; saved ${path.resolve(opts.file)} (${opts.width} px wide)`);
    for (const text of [...problems.consoleErrors, ...problems.pageErrors]) console.log(`  console error: ${text}`);
    for (const text of problems.cspViolations) console.log(`  CSP violation: ${text}`);
  } finally {
    await browser.close();
  }
}

main().catch((err: unknown) => {
  console.error(`screenshot: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
