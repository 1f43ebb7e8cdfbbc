import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readJson } from '../../db/database';
import { Filter, rawPage } from '../../db/list';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, invalidParameter, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { Page } from '../../core/pagination';
import type { SecretBox } from '../../core/crypto';
import { checkWebhookUrl, checkWebhookUrlSyntax, type ResolveHost } from '../../webhooks/address-policy';
import { generateWebhookSecret } from '../../webhooks/signature';
import { createEndpointInput, listEndpointsInput, rotateSecretInput, updateEndpointInput } from './webhook.inputs';

export type EndpointStatus = 'enabled' | 'disabled';

export interface WebhookEndpoint {
  id: string;
  object: 'webhook_endpoint';
  livemode: boolean;
  url: string;
  events: string[];
  description: string | null;
  status: EndpointStatus;
  /** Why it was disabled: "manual" (PATCH) or "gone" (the receiver answered 410). */
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
  /** Only in the responses of create and rotate-secret. */
  secret?: string;
}

export interface EndpointRow {
  id: string;
  account_id: string;
  mode: string;
  url: string;
  description: string | null;
  events: string;
  secret_sealed: string;
  status: string;
  disabled_reason: string | null;
  created_at: unknown;
  updated_at: unknown;
  deleted_at?: unknown;
}

const COLUMNS = 'id, account_id, mode, url, description, events, secret_sealed, status, disabled_reason, created_at, updated_at';

type Scope = { accountId: string; mode: string };

export interface EndpointServiceOptions {
  /** Lift the private-address rule (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Replaces DNS resolution of endpoint hosts (tests). */
  resolveHost?: ResolveHost;
}

/** Webhook endpoints of an (account, mode): registration, secrets, enable/disable. */
export const MAX_ENDPOINTS = 16;

export class WebhookEndpointService {
  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
    private readonly options: EndpointServiceOptions,
  ) {}

  async create(ctx: RequestContext, input: unknown): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const data = parseInput(createEndpointInput, input);
    await this.checkUrl(data.url);
    // Every event copies its payload to each subscribed endpoint inside the writer's transaction:
    // a cap keeps one account from slowing every write.
    const [{ total }] = await this.db.select<{ total: number }>(
      'SELECT COUNT(*) AS total FROM webhook_endpoints WHERE account_id = $1 AND mode = $2 AND deleted_at IS NULL',
      [ctx.accountId, ctx.mode],
    );
    if (Number(total) >= MAX_ENDPOINTS) {
      throw new DomainError('limit_exceeded', `At most ${MAX_ENDPOINTS} webhook endpoints per account and mode; delete one first`);
    }
    ctx.sensitiveResponse = true; // the secret: sealed in the idempotency store
    const secret = generateWebhookSecret();
    const now = ctx.clock.now();
    const id = newId('we');
    await this.db.transaction(async (t) => {
      await this.db.execute(
        `INSERT INTO webhook_endpoints (id, account_id, mode, url, description, events, secret_sealed, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'enabled', $8, $8)`,
        [id, ctx.accountId, ctx.mode, data.url, data.description ?? null, JSON.stringify(data.events), this.box.seal(secret), now],
        t,
      );
    });
    return { ...(await this.retrieve(ctx, id)), secret };
  }

  async retrieve(ctx: RequestContext, id: string): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    return toApiEndpoint(await this.row(ctx, id));
  }

  async list(ctx: RequestContext, query: unknown): Promise<Page<WebhookEndpoint>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    const input = parseInput(listEndpointsInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode, status: input.status }).raw(() => 'deleted_at IS NULL');
    const { rows, total } = await rawPage<EndpointRow>(this.db, {
      table: 'webhook_endpoints', columns: COLUMNS, filter, sortColumn: 'created_at', params: input,
    });
    return { data: rows.map(toApiEndpoint), total, page: input.page, pageSize: input.pageSize };
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const data = parseInput(updateEndpointInput, input);
    const current = await this.row(ctx, id);
    if (data.url !== undefined && data.url !== current.url) await this.checkUrl(data.url);
    const sets: string[] = [];
    const bind: unknown[] = [];
    const set = (column: string, value: unknown) => {
      bind.push(value);
      sets.push(`${column} = $${bind.length}`);
    };
    if (data.url !== undefined) set('url', data.url);
    if (data.events !== undefined) set('events', JSON.stringify(data.events));
    if (data.description !== undefined) set('description', data.description);
    if (data.status !== undefined && data.status !== current.status) {
      set('status', data.status);
      set('disabled_reason', data.status === 'disabled' ? 'manual' : null);
    }
    if (sets.length === 0) return toApiEndpoint(current);
    const now = ctx.clock.now();
    set('updated_at', now);
    await this.db.transaction(async (t) => {
      bind.push(id, ctx.accountId, ctx.mode);
      const n = bind.length;
      const changed = await this.db.execute(
        `UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE id = $${n - 2} AND account_id = $${n - 1} AND mode = $${n} AND deleted_at IS NULL`,
        bind,
        t,
      );
      if (changed !== 1) throw notFound('webhook endpoint', id);
      if (data.status === 'disabled') await this.abandonPending(t, id, now, 'endpoint disabled');
    });
    return this.retrieve(ctx, id);
  }

  /** Soft delete: the attempt log stays; queued deliveries are abandoned. */
  async remove(ctx: RequestContext, id: string): Promise<WebhookEndpoint & { deleted: true }> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const now = ctx.clock.now();
    await this.db.transaction(async (t) => {
      const changed = await this.db.execute(
        `UPDATE webhook_endpoints SET deleted_at = $1, updated_at = $1, status = 'disabled', disabled_reason = 'deleted'
         WHERE id = $2 AND account_id = $3 AND mode = $4 AND deleted_at IS NULL`,
        [now, id, ctx.accountId, ctx.mode],
        t,
      );
      if (changed !== 1) throw notFound('webhook endpoint', id);
      await this.abandonPending(t, id, now, 'endpoint deleted');
    });
    const [row] = await this.db.select<EndpointRow>(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1`, [id]);
    return { ...toApiEndpoint(row), deleted: true };
  }

  /** A new secret, shown once; every delivery sent from now on is signed with it. */
  async rotateSecret(ctx: RequestContext, id: string, input: unknown): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    parseInput(rotateSecretInput, input);
    await this.row(ctx, id);
    ctx.sensitiveResponse = true;
    const secret = generateWebhookSecret();
    const changed = await this.db.transaction((t) =>
      this.db.execute(
        'UPDATE webhook_endpoints SET secret_sealed = $1, updated_at = $2 WHERE id = $3 AND account_id = $4 AND mode = $5 AND deleted_at IS NULL',
        [this.box.seal(secret), ctx.clock.now(), id, ctx.accountId, ctx.mode],
        t,
      ),
    );
    if (changed !== 1) throw notFound('webhook endpoint', id);
    return { ...(await this.retrieve(ctx, id)), secret };
  }

  /** The endpoint of the caller's account and mode (deleted ones included when asked). */
  async row(ctx: Scope, id: string, opts: { includeDeleted?: boolean } = {}): Promise<EndpointRow> {
    const [row] = await this.db.select<EndpointRow>(
      `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2 AND mode = $3${opts.includeDeleted ? '' : ' AND deleted_at IS NULL'}`,
      [id, ctx.accountId, ctx.mode],
    );
    if (!row) throw notFound('webhook endpoint', id);
    return row;
  }

  openSecret(sealed: string): string {
    return this.box.open<string>(sealed);
  }

  /** The receiver answered 410 Gone: stop delivering to it until it is enabled again. */
  async disableGone(t: Transaction, scope: Scope, id: string, now: Date): Promise<void> {
    const changed = await this.db.execute(
      "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'gone', updated_at = $1 WHERE id = $2 AND account_id = $3 AND mode = $4 AND status = 'enabled'",
      [now, id, scope.accountId, scope.mode],
      t,
    );
    if (changed) await this.abandonPending(t, id, now, 'endpoint gone (HTTP 410)');
  }

  /** Queued deliveries of an endpoint that is no longer enabled; ones in flight settle themselves. */
  private async abandonPending(t: Transaction, endpointId: string, now: Date, reason: string): Promise<void> {
    await this.db.execute(
      `UPDATE webhook_deliveries SET status = 'abandoned', last_error = $1, updated_at = $2
       WHERE endpoint_id = $3 AND status = 'pending' AND (locked_until IS NULL OR locked_until < $2)`,
      [reason, now, endpointId],
      t,
    );
  }

  /** https only, no credentials; unless allowed, the host must resolve to public addresses only. */
  private async checkUrl(url: string): Promise<void> {
    const syntax = checkWebhookUrlSyntax(url, true);
    if (!syntax.ok) throw invalidParameter('url', `Invalid 'url': ${syntax.reason}`);
    if (this.options.allowPrivate) return;
    const checked = await checkWebhookUrl(url, { allowPrivate: false, resolve: this.options.resolveHost });
    if (!checked.ok) throw new DomainError('invalid_parameter', `Invalid 'url': ${checked.reason}`, 'url');
  }
}

export function toApiEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    object: 'webhook_endpoint',
    livemode: row.mode === 'live',
    url: row.url,
    events: readJson<string[]>(row.events, []),
    description: row.description ?? null,
    status: row.status as EndpointStatus,
    disabledReason: row.disabled_reason ?? null,
    createdAt: isoTime(row.created_at) as string,
    updatedAt: isoTime(row.updated_at) as string,
  };
}
