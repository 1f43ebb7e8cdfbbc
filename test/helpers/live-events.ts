import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import type { WsResult } from './graphql-ws';
import type { TestAccount, TestApp } from './app';

/**
 * A graphql-ws client of any instance at `baseUrl` (a test app's or a spawned one's), trusting
 * `ca`. Its socket closes as soon as no operation is open (no lazyCloseTimeout: graphql-ws's
 * dispose leaves that timer running, which kept jest's worker alive after a completed operation).
 */
export function wsClientAt(baseUrl: string, ca: string, key: string): Client {
  class TrustingWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { ca, servername: 'localhost' } as WebSocket.ClientOptions);
    }
  }
  return createClient({
    url: `${baseUrl.replace('https:', 'wss:')}/graphql`, webSocketImpl: TrustingWebSocket, connectionParams: { authorization: `Bearer ${key}` },
    retryAttempts: 0, lazy: true,
  });
}

/** What a subscription received so far. */
export interface Collected<T> {
  items: T[];
  /** The results that carried errors, and an `error` message's errors. */
  errors: Array<NonNullable<WsResult['errors']>>;
  /** Every result as it came (extensions included). */
  results: WsResult[];
  completed: boolean;
  stop(): void;
}

/** Subscribes and keeps what arrives: `pick` takes an item from each result's data. */
export function collect<T>(client: Client, query: string, variables: Record<string, unknown>, pick: (data: Record<string, any>) => T): Collected<T> {
  const collected: Collected<T> = { items: [], errors: [], results: [], completed: false, stop: () => undefined };
  collected.stop = client.subscribe({ query, variables }, {
    next: (r) => {
      const result = r as WsResult & { extensions?: Record<string, unknown> };
      collected.results.push(result);
      if (result.errors) collected.errors.push(result.errors);
      if (result.data) collected.items.push(pick(result.data));
    },
    error: (e) => {
      collected.errors.push((Array.isArray(e) ? e : [{ message: String((e as { reason?: string }).reason ?? e), extensions: {} }]) as NonNullable<WsResult['errors']>);
    },
    complete: () => {
      collected.completed = true;
    },
  });
  return collected;
}

/** The ids in `ids` that appear more than once. */
export function duplicates(ids: string[]): string[] {
  const seen = new Set<string>();
  return ids.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
}

/** The account's test-mode event ids in the stream's order (createdAt, then id), as REST lists them oldest first. */
export async function eventIds(app: TestApp, account: TestAccount): Promise<string[]> {
  const ids: string[] = [];
  for (let page = 1; ; page++) {
    const res = await app.request('GET', `/v1/events?sortDirection=asc&pageSize=100&page=${page}`, { key: account.testKey });
    ids.push(...res.body.data.map((e: { id: string }) => e.id));
    if (res.body.data.length < 100) return ids;
  }
}
