import fs from 'node:fs';
import path from 'node:path';
import { X509Certificate, createHash } from 'node:crypto';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Headless Chromium for the hosted pages (the browser tests and `npm run screenshot`), driven by
 * playwright-core with the system's Chromium (Debian's `chromium`; CHROMIUM_PATH overrides).
 * It trusts exactly the service's certificate, by the hash of its public key, instead of
 * ignoring certificate errors: any other certificate still fails as it would for a customer.
 */

/** Base64 SHA-256 of the certificate's SubjectPublicKeyInfo: what Chromium's SPKI allow-list takes. */
export function spkiFingerprint(certPem: string): string {
  const spki = new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

/** CHROMIUM_PATH, else Debian's /usr/bin/chromium, else the first `chromium` on PATH. */
export function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const dirs = ['/usr/bin', ...(process.env.PATH ?? '').split(path.delimiter)];
  for (const dir of dirs) {
    for (const name of ['chromium', 'chromium-browser']) {
      const candidate = path.join(dir, name);
      if (fs.existsSync(candidate)) return candidate;
    }
  }
  throw new Error('Chromium not found: install it (apt-get install -y chromium) or set CHROMIUM_PATH');
}

/**
 * A headless Chromium that trusts the given certificate. Playwright gives every launch a fresh
 * temporary profile (user-data-dir), which the SPKI allow-list needs, and removes it on close.
 * No background traffic (updates, sync, QUIC), so a run talks to the service and nothing else.
 */
export async function launchChromium(opts: { trustCertPem: string }): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      `--ignore-certificate-errors-spki-list=${spkiFingerprint(opts.trustCertPem)}`,
    ],
  });
}

/** What a page reported while it was open: console errors, uncaught exceptions and CSP violations. */
export interface PageProblems {
  consoleErrors: string[];
  pageErrors: string[];
  cspViolations: string[];
}

/**
 * Records a context's page problems. CSP violations are caught by the page itself
 * (`securitypolicyviolation`, added before any of the page's own script) and reported through an
 * exposed binding, so a violation that Chromium does not print to the console is still seen.
 */
export async function watchProblems(context: BrowserContext): Promise<PageProblems> {
  const problems: PageProblems = { consoleErrors: [], pageErrors: [], cspViolations: [] };
  await context.exposeBinding('__payorchCspViolation', (_source, text: string) => {
    problems.cspViolations.push(text);
  });
  // A string, not a function: it runs in the page, whose globals this project's types do not know.
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', function (e) {
  window.__payorchCspViolation(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' (' + e.sourceFile + ':' + e.lineNumber + ')');
});`,
  });
  const watch = (page: Page) => {
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.consoleErrors.push(msg.location().url ? `${msg.text()} at ${msg.location().url}` : msg.text());
    });
    page.on('pageerror', (err) => problems.pageErrors.push(String(err)));
  };
  context.pages().forEach(watch);
  context.on('page', watch);
  return problems;
}

/**
 * A PNG of the page at `file`. Headless Chromium sometimes refuses a capture while the machine is
 * busy ("Protocol error (Page.captureScreenshot): Unable to capture screenshot", seen with three
 * test workers on two cores); it is tried again twice, a moment apart, before that error stands.
 */
export async function saveScreenshot(page: Page, file: string, opts: { fullPage?: boolean } = {}): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await page.screenshot({ path: file, fullPage: opts.fullPage ?? false });
      return;
    } catch (err) {
      if (attempt >= 3 || !/Unable to capture screenshot/.test(String((err as Error).message))) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
}
