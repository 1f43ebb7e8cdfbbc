import https from 'node:https';
import http from 'node:http';

export interface HttpResponse<T = any> {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body's bytes as received (a PDF, say). */
  buffer: Buffer;
  body: T;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** The source address to connect from (any 127.0.0.x on loopback), as another client would. */
  localAddress?: string;
}

/** A real HTTPS request that trusts only the test server's certificate. */
export function httpsRequest(baseUrl: string, ca: string, method: string, path: string, opts: RequestOptions = {}): Promise<HttpResponse> {
  const url = new URL(path, baseUrl);
  const payload = opts.rawBody ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined);
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(url, { method, headers, ca, agent: false, localAddress: opts.localAddress, servername: url.hostname === '127.0.0.1' ? 'localhost' : undefined }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const buffer = Buffer.concat(chunks);
        const text = buffer.toString('utf8');
        let body: unknown = null;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          body = null;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, buffer, body });
      });
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}
