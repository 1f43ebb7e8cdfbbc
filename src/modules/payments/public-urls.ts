import { DomainError } from '../../core/errors';
import type { Mode } from '../../core/context';

/** Where the hosted pages live: PUBLIC_URL, or this instance's own HTTPS address until one is set. */
export class PublicUrls {
  private port: number | undefined;

  constructor(
    private readonly publicUrl: string | undefined,
    private readonly configuredPort: number,
  ) {}

  /** The HTTPS listener's port once it listens (port 0 picks one): the default base uses it. */
  listeningOn(port: number): void {
    this.port = port;
  }

  base(): string {
    return this.publicUrl ?? `https://localhost:${this.port ?? this.configuredPort}`;
  }

  checkout(sessionId: string): string {
    return `${this.base()}/checkout/${encodeURIComponent(sessionId)}`;
  }

  /** A sent invoice's hosted page, where the customer pays it by card. */
  invoice(invoiceId: string): string {
    return `${this.base()}/invoice/${encodeURIComponent(invoiceId)}`;
  }

  paymentLink(slug: string): string {
    return `${this.base()}/pay/${encodeURIComponent(slug)}`;
  }
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Where a customer is sent back after a hosted page: an absolute https:// URL; http:// only to
 * this machine (localhost, 127.0.0.1, [::1]) and only in test mode, for development.
 */
export function returnUrlChecker(mode: Mode): (value: string, param: string) => string {
  return (value, param) => {
    const refuse = () =>
      new DomainError('invalid_parameter', `${param} must be an absolute https:// URL${mode === 'test' ? ' (or http:// to localhost in test mode)' : ''}`, param);
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw refuse();
    }
    if (url.username || url.password) throw new DomainError('invalid_parameter', `${param} must not carry a user name or password`, param);
    if (url.protocol === 'https:') return url.toString();
    if (url.protocol === 'http:' && mode === 'test' && LOCAL_HOSTS.has(url.hostname)) return url.toString();
    throw refuse();
  };
}
