import type { Database } from '../../db/database';
import { Filter, listPage } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';

type Scope = { accountId: string; mode: string };

/** A gateway as stored: settings and currencies as JSON text, credentials sealed. */
export interface GatewayRow {
  id: string;
  mode: string;
  name: string;
  type: string;
  credentials_sealed: string | null;
  settings: string;
  currencies: string | null;
  enabled: unknown;
  created_at: unknown;
  updated_at: unknown;
}

const COLUMNS = 'id, mode, name, type, credentials_sealed, settings, currencies, enabled, created_at, updated_at';

/**
 * The gateways' raw reads. `forConnector` is on the hot path (every charge and refund attempt
 * asks for its connector): a bound statement, not a model read. Writes go through GatewayModel.
 */
export class GatewayStore {
  constructor(private readonly db: Database) {}

  /** The gateway of this account and mode, deleted ones included (past payments are refunded through them). */
  async forConnector(scope: Scope, id: string): Promise<GatewayRow | null> {
    const [row] = await this.db.select<GatewayRow>(`SELECT ${COLUMNS} FROM gateways WHERE id = $1 AND account_id = $2 AND mode = $3`, [
      id, scope.accountId, scope.mode,
    ]);
    return row ?? null;
  }

  /** A page of the live (not deleted) gateways, each mapped by `toApi`. */
  async list<T, O extends ListOptions = Counted>(
    scope: Scope, input: ListParams<'createdAt' | 'name'> & { type?: readonly string[]; enabled?: boolean }, toApi: (row: GatewayRow) => T, options?: O,
  ): Promise<PageFor<T, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, enabled: input.enabled }).anyOf('type', input.type).raw(() => 'deleted_at IS NULL');
    return listPage(this.db, { table: 'gateways', columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at', name: 'name' }, toApi }, options);
  }

  /** Several live (not deleted) gateways of the account and mode by id, in one statement whatever their number. */
  async findMany(scope: Scope, ids: readonly string[]): Promise<GatewayRow[]> {
    if (ids.length === 0) return [];
    return this.db.select<GatewayRow>(
      `SELECT ${COLUMNS} FROM gateways WHERE ${this.db.inJsonList('id', '$1')} AND account_id = $2 AND mode = $3 AND deleted_at IS NULL`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
  }
}
