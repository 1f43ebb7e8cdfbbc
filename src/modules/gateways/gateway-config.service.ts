import { z } from 'zod';
import type { Database } from '../../db/database';
import { isoTime, readBool, readJson } from '../../db/database';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { currencySchema } from '../../core/money';
import { parseInput } from '../../core/validation';
import { listSchema, type Page } from '../../core/pagination';
import { Filter, rawPage } from '../../db/list';
import type { SecretBox } from '../../core/crypto';
import type { Gateway } from '../../gateways/gateway';
import { GATEWAY_TYPES, GatewayConfigError, createGateway, validateGatewayConfig, withStorableResults } from '../../gateways/registry';

export interface GatewayView {
  id: string;
  object: 'gateway';
  livemode: boolean;
  name: string;
  type: string;
  enabled: boolean;
  currencies: string[] | null;
  settings: Record<string, unknown>;
  credentialsSet: boolean;
  createdAt: string;
  updatedAt: string;
}

/** What routing and payments need to know about a configured gateway. */
export interface RoutableGateway {
  id: string;
  type: string;
  enabled: boolean;
  currencies: string[] | null;
}

/** Test mode without any configured gateway charges through this built-in simulator. */
export const BUILTIN_SIMULATOR_ID = 'gw_builtin_simulator';

const credentialsSchema = z.record(z.string(), z.string().max(2000), { error: 'credentials must be an object of strings' });
const settingsSchema = z.record(z.string(), z.unknown(), { error: 'settings must be an object' });
/** Upper-cased, each once (`["usd", "USD"]` is `["USD"]`). */
const currenciesSchema = z.array(currencySchema).min(1).max(200).transform((list) => [...new Set(list)]).nullable();

const createInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    type: z.enum(GATEWAY_TYPES as unknown as [string, ...string[]], { error: `type must be one of ${GATEWAY_TYPES.join(', ')}` }),
    credentials: credentialsSchema.optional(),
    currencies: currenciesSchema.optional(),
    enabled: z.boolean().optional(),
    settings: settingsSchema.optional(),
  })
  .strict();

const updateInput = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    credentials: credentialsSchema.optional(),
    currencies: currenciesSchema.optional(),
    enabled: z.boolean().optional(),
    settings: settingsSchema.optional(),
  })
  .strict();

const listInput = listSchema(['createdAt', 'name'] as const, {
  type: z.string().max(40).optional(),
  enabled: z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean()).optional(),
});

interface GatewayRow {
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
 * A connector's base URL receives the gateway secret and raw card data, so it may only be
 * changed in test mode (local fakes), and changing it needs the credentials sent again.
 */
function guardBaseUrl(ctx: RequestContext, settings: Record<string, unknown> | undefined, credentialsSent: boolean, previous?: Record<string, unknown>): void {
  if (!settings || settings.baseUrl === undefined) return;
  if (ctx.mode === 'live') {
    throw new DomainError('invalid_parameter', 'settings.baseUrl can only be set in test mode', 'settings.baseUrl');
  }
  if (previous && previous.baseUrl !== settings.baseUrl && !credentialsSent) {
    throw new DomainError('missing_parameter', 'Send the credentials again when changing settings.baseUrl', 'credentials');
  }
}

function configError(err: unknown): never {
  if (err instanceof GatewayConfigError) throw new DomainError(err.code, err.message, err.param);
  throw err;
}

export class GatewayConfigService {
  private readonly instances = new Map<string, { version: string; gateway: Gateway }>();
  private builtin?: Gateway;
  private readonly changeListeners: Array<(accountId: string, mode: string) => void> = [];
  private readonly removalGuards: Array<(ctx: RequestContext, id: string) => Promise<boolean>> = [];

  /** A guard answering true keeps a gateway from being deleted (routing rules still name it). */
  guardRemoval(inUse: (ctx: RequestContext, id: string) => Promise<boolean>): void {
    this.removalGuards.push(inUse);
  }

  /** Told whenever a gateway of an account and mode is created, changed or deleted. */
  onChange(listener: (accountId: string, mode: string) => void): void {
    this.changeListeners.push(listener);
  }

  private changed(ctx: RequestContext): void {
    for (const listener of this.changeListeners) listener(ctx.accountId, ctx.mode);
  }

  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
    private readonly connectorOptions: { timeoutMs?: number; ca?: string; clock?: { now(): Date } } = {},
  ) {}

  async create(ctx: RequestContext, input: unknown): Promise<GatewayView> {
    requirePermission(ctx, 'gateways', 'write');
    const data = parseInput(createInput, input);
    const credentials = data.credentials ?? {};
    const settings = data.settings ?? {};
    guardBaseUrl(ctx, settings, true);
    try {
      validateGatewayConfig(data.type, credentials, settings);
    } catch (err) {
      configError(err);
    }
    const now = ctx.clock.now();
    const id = newId('gw');
    await this.db.execute(
      `INSERT INTO gateways (id, account_id, mode, name, type, credentials_sealed, settings, currencies, enabled, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
      [
        id, ctx.accountId, ctx.mode, data.name, data.type,
        Object.keys(credentials).length ? this.box.seal(credentials) : null,
        JSON.stringify(settings), data.currencies ? JSON.stringify(data.currencies) : null, data.enabled ?? true, now,
      ],
    );
    this.changed(ctx);
    return this.retrieve(ctx, id);
  }

  async retrieve(ctx: RequestContext, id: string): Promise<GatewayView> {
    requirePermission(ctx, 'gateways', 'read');
    return toView(await this.row(ctx, id));
  }

  async list(ctx: RequestContext, query: unknown): Promise<Page<GatewayView>> {
    requirePermission(ctx, 'gateways', 'read');
    const input = parseInput(listInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode, type: input.type, enabled: input.enabled }).raw(() => 'deleted_at IS NULL');
    const { rows, total } = await rawPage<GatewayRow>(this.db, {
      table: 'gateways', columns: COLUMNS, filter, sortColumn: input.sortField === 'name' ? 'name' : 'created_at', params: input,
    });
    return { data: rows.map(toView), total, page: input.page, pageSize: input.pageSize };
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<GatewayView> {
    requirePermission(ctx, 'gateways', 'write');
    const data = parseInput(updateInput, input);
    const row = await this.row(ctx, id);
    const sets: string[] = [];
    const bind: unknown[] = [];
    const set = (column: string, value: unknown) => {
      bind.push(value);
      sets.push(`${column} = $${bind.length}`);
    };
    guardBaseUrl(ctx, data.settings, data.credentials !== undefined, readJson<Record<string, unknown>>(row.settings, {}));
    if (data.credentials !== undefined || data.settings !== undefined) {
      const credentials = data.credentials ?? (row.credentials_sealed ? this.box.open<Record<string, string>>(row.credentials_sealed) : {});
      const settings = data.settings ?? readJson<Record<string, unknown>>(row.settings, {});
      try {
        validateGatewayConfig(row.type, credentials, settings);
      } catch (err) {
        configError(err);
      }
      if (data.credentials !== undefined) set('credentials_sealed', Object.keys(credentials).length ? this.box.seal(credentials) : null);
      if (data.settings !== undefined) set('settings', JSON.stringify(settings));
    }
    if (data.name !== undefined) set('name', data.name);
    if (data.currencies !== undefined) set('currencies', data.currencies ? JSON.stringify(data.currencies) : null);
    if (data.enabled !== undefined) set('enabled', data.enabled);
    if (sets.length === 0) return toView(row);
    set('updated_at', ctx.clock.now());
    bind.push(id, ctx.accountId, ctx.mode);
    const n = bind.length;
    await this.db.execute(`UPDATE gateways SET ${sets.join(', ')} WHERE id = $${n - 2} AND account_id = $${n - 1} AND mode = $${n}`, bind);
    this.instances.delete(id);
    this.changed(ctx);
    return this.retrieve(ctx, id);
  }

  /** Soft delete: past payments keep a gateway to refund through; routing may not name it. */
  async remove(ctx: RequestContext, id: string): Promise<GatewayView> {
    requirePermission(ctx, 'gateways', 'write');
    const row = await this.row(ctx, id);
    const inUse = await Promise.all(this.removalGuards.map((guard) => guard(ctx, id)));
    if (inUse.some(Boolean)) {
      throw new DomainError('gateway_in_use', 'The routing rules still use this gateway; remove it from them first', 'id');
    }
    const now = ctx.clock.now();
    await this.db.execute('UPDATE gateways SET deleted_at = $1, enabled = $2, updated_at = $1 WHERE id = $3', [now, false, id]);
    this.instances.delete(id);
    this.changed(ctx);
    return { ...toView(row), enabled: false, updatedAt: now.toISOString() };
  }

  /** Every live (not deleted) gateway of the account and mode, for routing. */
  async routable(ctx: RequestContext): Promise<RoutableGateway[]> {
    const rows = await this.db.select<{ id: string; type: string; enabled: unknown; currencies: string | null }>(
      'SELECT id, type, enabled, currencies FROM gateways WHERE account_id = $1 AND mode = $2 AND deleted_at IS NULL ORDER BY created_at, id',
      [ctx.accountId, ctx.mode],
    );
    return rows.map((r) => ({ id: r.id, type: r.type, enabled: readBool(r.enabled), currencies: r.currencies ? readJson<string[]>(r.currencies, []) : null }));
  }

  async exists(ctx: RequestContext, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.select<{ id: string }>(
      `SELECT id FROM gateways WHERE account_id = $1 AND mode = $2 AND deleted_at IS NULL AND id IN (${ids.map((_, i) => `$${i + 3}`).join(', ')})`,
      [ctx.accountId, ctx.mode, ...ids],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** A connector instance for a gateway of this account (deleted ones included, for refunds). */
  async connector(ctx: { accountId: string; mode: string }, id: string): Promise<{ gateway: Gateway; type: string }> {
    if (id === BUILTIN_SIMULATOR_ID) {
      this.builtin ??= withStorableResults(
        createGateway('simulator', { gatewayId: BUILTIN_SIMULATOR_ID, credentials: {}, settings: {}, clock: this.connectorOptions.clock }),
      );
      return { gateway: this.builtin, type: 'simulator' };
    }
    const [row] = await this.db.select<GatewayRow>(`SELECT ${COLUMNS} FROM gateways WHERE id = $1 AND account_id = $2 AND mode = $3`, [
      id, ctx.accountId, ctx.mode,
    ]);
    if (!row) throw new DomainError('no_gateway_available', `Gateway ${id} is not configured`);
    const version = String(isoTime(row.updated_at));
    const cached = this.instances.get(id);
    if (cached && cached.version === version) return { gateway: cached.gateway, type: row.type };
    const gateway = withStorableResults(createGateway(row.type, {
      gatewayId: id,
      credentials: row.credentials_sealed ? this.box.open<Record<string, string>>(row.credentials_sealed) : {},
      settings: readJson<Record<string, unknown>>(row.settings, {}),
      httpsAgentOptions: this.connectorOptions.ca ? { ca: this.connectorOptions.ca } : undefined,
      timeoutMs: this.connectorOptions.timeoutMs,
      clock: this.connectorOptions.clock,
    }));
    this.instances.set(id, { version, gateway });
    return { gateway, type: row.type };
  }

  private async row(ctx: RequestContext, id: string): Promise<GatewayRow> {
    const [row] = await this.db.select<GatewayRow>(
      `SELECT ${COLUMNS} FROM gateways WHERE id = $1 AND account_id = $2 AND mode = $3 AND deleted_at IS NULL`,
      [id, ctx.accountId, ctx.mode],
    );
    if (!row) throw notFound('gateway', id);
    return row;
  }
}

function toView(row: GatewayRow): GatewayView {
  return {
    id: row.id,
    object: 'gateway',
    livemode: row.mode === 'live',
    name: row.name,
    type: row.type,
    enabled: readBool(row.enabled),
    currencies: row.currencies ? readJson<string[]>(row.currencies, []) : null,
    settings: readJson<Record<string, unknown>>(row.settings, {}),
    credentialsSet: Boolean(row.credentials_sealed),
    createdAt: isoTime(row.created_at) as string,
    updatedAt: isoTime(row.updated_at) as string,
  };
}
