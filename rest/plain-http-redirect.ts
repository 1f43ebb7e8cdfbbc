import type http from 'node:http';
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { secureRandomBytes } from '../src/core/ids';
import { html } from './pages/html';
import { PAGE_HEADERS, pageDocument } from './pages/page-layout';
import { isPagePath } from './pages/pages.routes';

export interface RedirectOptions {
  /** PUBLIC_URL: when set, every redirect goes there. */
  publicUrl?: string;
  /** HOST the listeners are bound to (a wildcard names no host). */
  bindHost: string;
  /** The HTTPS listener's certificate (PEM): the names it is valid for are ours. */
  cert: string;
  httpsPort: () => number;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/** An address as written in a Host header: IPv4-mapped IPv6 as IPv4, lower case, no brackets. */
function plainAddress(address: string | undefined): string | undefined {
  if (!address) return undefined;
  const bare = address.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/.test(bare) ? bare.slice(7) : bare;
}

function urlHost(name: string): string {
  return isIP(name) === 6 ? `[${name}]` : name;
}

/** The host part of a Host header, lower case, brackets off; undefined when it is not a host name or address. */
function hostOfHeader(header: string | undefined): string | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+))(?::\d{1,5})?$/.exec(header ?? '');
  if (!m) return undefined;
  return plainAddress(m[1] ?? m[2]);
}

/**
 * Where a redirect may point without PUBLIC_URL. The Host header is the client's to write, so
 * it is used only when it names this server: `localhost`, the HOST it is bound to, the address
 * the connection arrived at, or a name or address the certificate is valid for. Anything else
 * (`Host: evil.example`) gets the address the connection arrived at.
 */
export function redirectHost(opts: Pick<RedirectOptions, 'bindHost' | 'cert'>): (hostHeader: string | undefined, localAddress: string | undefined) => string {
  const certificate = new X509Certificate(opts.cert);
  const bound = WILDCARDS.has(opts.bindHost) ? undefined : plainAddress(opts.bindHost);
  return (hostHeader, localAddress) => {
    const local = plainAddress(localAddress);
    const asked = hostOfHeader(hostHeader);
    if (asked !== undefined) {
      const ours =
        asked === 'localhost' ||
        asked === bound ||
        asked === local ||
        (isIP(asked) ? certificate.checkIP(asked) !== undefined : certificate.checkHost(asked) !== undefined);
      if (ours) return urlHost(asked);
    }
    return local ? urlHost(local) : 'localhost';
  };
}

/**
 * The plain-HTTP listener: every request answers 301 to the same path and query over HTTPS.
 * A page path gets the redirect as an HTML page (a browser shows it if it does not follow),
 * an API path the JSON error envelope.
 */
export function plainHttpRedirect(opts: RedirectOptions): http.RequestListener {
  const hostFor = redirectHost(opts);
  return (req, res) => {
    const requestId = `req_${secureRandomBytes(12).toString('hex')}`;
    const port = opts.httpsPort();
    const base = opts.publicUrl ?? `https://${hostFor(req.headers.host, req.socket.localAddress)}${port === 443 ? '' : `:${port}`}`;
    const target = req.url?.startsWith('/') ? req.url : '/';
    const location = `${base}${target}`;
    const message = 'HTTPS is required; use the https:// address';
    let body: string;
    let headers: Record<string, string>;
    if (isPagePath(target.split('?')[0])) {
      body = pageDocument({
        title: 'Moved',
        body: html`<h1>Moved</h1>
<p>${message}: <a href="${location}">${location}</a></p>
<p class="meta">Error <code>https_required</code> · Request id <code>${requestId}</code></p>`,
      });
      headers = { ...PAGE_HEADERS, 'Content-Type': 'text/html; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' };
    } else {
      body = JSON.stringify({ data: null, error: { code: 'https_required', message, requestId } });
      headers = { 'Content-Type': 'application/json; charset=utf-8' };
    }
    res.writeHead(301, { ...headers, Location: location, 'Content-Length': String(Buffer.byteLength(body)), 'X-Request-Id': requestId });
    res.end(body);
  };
}
