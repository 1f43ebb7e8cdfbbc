import type { Database } from '../../db/database';
import { Filter, listPage, modelSource } from '../../db/list';
import type { Mode } from '../../core/context';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import { ApiKeyModel } from './api-key.model';

/** An API key as the per-request lookup reads it, with its account's rate limit. */
export interface StoredKey {
  id: string;
  account_id: string;
  mode: Mode;
  /** JSON array, as text on SQLite. */
  permissions: unknown;
  revoked_at: unknown;
  rate_limit_per_minute: number | null;
}

/**
 * The accounts' raw reads. `lookupKey` runs for every request whose key is not cached: one
 * indexed statement by the key's hash. Other reads and the writes go through AccountModel and
 * ApiKeyModel.
 */
export class AccountStore {
  constructor(private readonly db: Database) {}

  /** The key with this hash, revoked or not (the caller decides), or null. */
  async lookupKey(hash: string): Promise<StoredKey | null> {
    const [row] = await this.db.select<StoredKey>(
      `SELECT k.id, k.account_id, k.mode, k.permissions, k.revoked_at, a.rate_limit_per_minute
         FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1`,
      [hash],
    );
    return row ?? null;
  }

  /** A page of the account's keys in this mode, rows under the model's attribute names, each mapped by `toApi`. */
  async listKeys<T, O extends ListOptions = Counted>(
    scope: { accountId: string; mode: string }, input: ListParams<'createdAt'>, toApi: (row: Record<string, unknown>) => T, options?: O,
  ): Promise<PageFor<T, O>> {
    return listPage(this.db, {
      ...modelSource(ApiKeyModel), filter: new Filter({ account_id: scope.accountId, mode: scope.mode }), params: input, sortColumns: { createdAt: 'created_at' }, toApi,
    }, options);
  }
}
