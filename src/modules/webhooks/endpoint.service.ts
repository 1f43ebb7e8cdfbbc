import { Op, col, type Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { readJson, readTime } from '../../db/database';
import { lockAccount } from '../../db/account-lock';
import { Filter, listPage } from '../../db/list';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, invalidParameter, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { Page } from '../../core/pagination';
import type { SecretBox } from '../../core/crypto';
import { checkWebhookUrl, type ResolveHost } from '../../webhooks/address-policy';
import { generateWebhookSecret, type SigningSecrets } from '../../webhooks/signature';
import { WILDCARD, createEndpointInput, listEndpointsInput, rotateSecretInput, updateEndpointInput } from './webhook.inputs';
import { WebhookEndpointModel } from './webhook-endpoint.model';
import { WebhookDeliveryModel } from './webhook-delivery.model';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { IdempotentOperation } from '../../core/idempotent-operations';

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
  /** Lift the private-address rule in test mode (WEBHOOK_ALLOW_PRIVATE); never in live mode. */
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
    /** Creates and rotations answer their Idempotency-Key through it (tests of the service alone go without). */
    private readonly idempotency?: IdempotencyService,
  ) {}

  /** Runs `write` in a transaction under `idem` (see IdempotencyService.once). */
  private once<T>(idem: IdempotencyKey | undefined, operation: IdempotentOperation, write: (t: Transaction) => Promise<T>): Promise<T> {
    if (idem && !this.idempotency) throw new Error('an Idempotency-Key needs the idempotency service');
    return this.db.transaction((t) => (this.idempotency ? this.idempotency.once(t, idem, operation, () => write(t)) : write(t)));
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const data = parseInput(createEndpointInput, input);
    await this.checkUrl(data.url, ctx.mode);
    const secret = generateWebhookSecret();
    const now = ctx.clock.now();
    return this.once(idem, IDEMPOTENT_OPERATIONS.createWebhookEndpoint, async (transaction) => {
      // Every event copies its payload to each subscribed endpoint inside the writer's transaction:
      // a cap keeps one account from slowing every write. Counted and inserted under the account's
      // lock, so creates made at once cannot all pass the same count.
      await lockAccount(this.db, transaction, ctx.accountId);
      const total = await WebhookEndpointModel.count({ where: { accountId: ctx.accountId, mode: ctx.mode, deletedAt: null }, transaction });
      if (total >= MAX_ENDPOINTS) {
        throw new DomainError('limit_exceeded', `At most ${MAX_ENDPOINTS} webhook endpoints per account and mode; delete one first`);
      }
      const endpoint = await WebhookEndpointModel.create(
        {
          id: newId('we'), accountId: ctx.accountId, mode: ctx.mode, url: data.url, description: data.description ?? null,
          events: JSON.stringify(data.events), secretSealed: this.box.seal(secret), status: 'enabled', disabledReason: null,
          createdAt: now, updatedAt: now, deletedAt: null,
        },
        { transaction },
      );
      return { ...endpointView(endpoint), secret };
    });
  }

  async retrieve(ctx: RequestContext, id: string): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    return endpointView(await this.row(ctx, id));
  }

  async list(ctx: RequestContext, query: unknown): Promise<Page<WebhookEndpoint>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    const input = parseInput(listEndpointsInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode, status: input.status }).raw(() => 'deleted_at IS NULL');
    return listPage(this.db, {
      table: 'webhook_endpoints', columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toApiEndpoint,
    });
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const data = parseInput(updateEndpointInput, input);
    const current = await this.row(ctx, id);
    if (data.url !== undefined && data.url !== current.url) await this.checkUrl(data.url, ctx.mode);
    const changes: Partial<Pick<WebhookEndpointModel, 'url' | 'events' | 'description' | 'status' | 'disabledReason' | 'goneSince' | 'updatedAt'>> = {};
    if (data.url !== undefined && data.url !== current.url) {
      changes.url = data.url;
      // Another receiver: the old URL's run of 410s says nothing about it.
      changes.goneSince = null;
    }
    if (data.events !== undefined) changes.events = JSON.stringify(data.events);
    if (data.description !== undefined) changes.description = data.description;
    if (data.status !== undefined && data.status !== current.status) {
      changes.status = data.status;
      changes.disabledReason = data.status === 'disabled' ? 'manual' : null;
      // Enabled again: a 410 run before the disable no longer counts.
      if (data.status === 'enabled') changes.goneSince = null;
    }
    if (Object.keys(changes).length === 0) return endpointView(current);
    const now = ctx.clock.now();
    changes.updatedAt = now;
    await this.db.transaction(async (transaction) => {
      const [changed] = await WebhookEndpointModel.update(changes, { where: this.live(ctx, id), transaction });
      if (changed !== 1) throw notFound('webhook endpoint', id);
      // Queued deliveries of the types it no longer subscribes to are not owed any more.
      if (data.events !== undefined && !data.events.includes(WILDCARD)) {
        await WebhookDeliveryModel.update(
          { status: 'abandoned', lastError: 'endpoint no longer subscribed to this event type', updatedAt: now },
          { where: { endpointId: id, status: { [Op.in]: ['pending', 'held'] }, eventType: { [Op.notIn]: data.events } }, transaction },
        );
      }
      if (changes.status === 'disabled') await this.holdPending(transaction, id, now, 'endpoint disabled');
      if (changes.status === 'enabled') await this.requeueHeld(transaction, id, now);
    });
    return this.retrieve(ctx, id);
  }

  /** Soft delete: the attempt log stays; queued deliveries are abandoned. */
  async remove(ctx: RequestContext, id: string): Promise<WebhookEndpoint & { deleted: true }> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const now = ctx.clock.now();
    await this.db.transaction(async (transaction) => {
      const [changed] = await WebhookEndpointModel.update(
        { deletedAt: now, updatedAt: now, status: 'disabled', disabledReason: 'deleted' },
        { where: this.live(ctx, id), transaction },
      );
      if (changed !== 1) throw notFound('webhook endpoint', id);
      await this.abandonPending(transaction, id, now, 'endpoint deleted');
    });
    const endpoint = await WebhookEndpointModel.findByPk(id);
    return { ...endpointView(endpoint as WebhookEndpointModel), deleted: true };
  }

  /**
   * A new secret, shown once. For `overlapSeconds` (default 24 h) the replaced secret still makes
   * X-Service-Signature and the new one X-Service-Signature-Next; after it, or at once with 0,
   * only the new secret signs.
   */
  async rotateSecret(ctx: RequestContext, id: string, input: unknown, idem?: IdempotencyKey): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const { overlapSeconds } = parseInput(rotateSecretInput, input);
    const secret = generateWebhookSecret();
    const now = ctx.clock.now();
    return this.once(idem, IDEMPOTENT_OPERATIONS.rotateWebhookSecret, async (transaction) => {
      // The UPDATE itself reads the secret it replaces, so of two concurrent rotations each retires
      // the secret it saw. A rotation during an overlap ends that overlap.
      const retiring = overlapSeconds > 0
        ? { previousSecretSealed: col('secret_sealed'), previousSecretExpiresAt: new Date(now.getTime() + overlapSeconds * 1000) }
        : { previousSecretSealed: null, previousSecretExpiresAt: null };
      const [changed] = await WebhookEndpointModel.update(
        { secretSealed: this.box.seal(secret), ...retiring, updatedAt: now },
        { where: this.live(ctx, id), transaction },
      );
      if (changed !== 1) throw notFound('webhook endpoint', id);
      const endpoint = await WebhookEndpointModel.findOne({ where: this.live(ctx, id), transaction });
      return { ...endpointView(endpoint as WebhookEndpointModel), secret };
    });
  }

  /** The secrets a delivery sent at `now` is signed with (the replaced one only while its overlap lasts). */
  async signingSecrets(endpointId: string, now: Date): Promise<SigningSecrets> {
    const [row] = await this.db.select<{ secret_sealed: string; previous_secret_sealed: string | null; previous_secret_expires_at: unknown }>(
      'SELECT secret_sealed, previous_secret_sealed, previous_secret_expires_at FROM webhook_endpoints WHERE id = $1',
      [endpointId],
    );
    if (!row) throw notFound('webhook endpoint', endpointId);
    const overlapEnds = readTime(row.previous_secret_expires_at);
    const inOverlap = row.previous_secret_sealed !== null && overlapEnds !== null && overlapEnds.getTime() > now.getTime();
    return { current: this.openSecret(row.secret_sealed), previous: inOverlap ? this.openSecret(row.previous_secret_sealed as string) : null };
  }

  /** The endpoint of the caller's account and mode (deleted ones included when asked). */
  async row(ctx: Scope, id: string, opts: { includeDeleted?: boolean } = {}): Promise<WebhookEndpointModel> {
    const where = opts.includeDeleted ? { id, accountId: ctx.accountId, mode: ctx.mode } : this.live(ctx, id);
    const endpoint = await WebhookEndpointModel.findOne({ where });
    if (!endpoint) throw notFound('webhook endpoint', id);
    return endpoint;
  }

  /** An endpoint of the caller's account and mode that is not deleted. */
  private live(ctx: Scope, id: string) {
    return { id, accountId: ctx.accountId, mode: ctx.mode, deletedAt: null };
  }

  openSecret(sealed: string): string {
    return this.box.open<string>(sealed);
  }

  /**
   * The receiver answered 410 Gone. One 410 proves little (a misrouted deploy answers it too):
   * the first starts a run, and the endpoint is disabled once a 410 comes `windowMs` or more
   * after the run began with no other HTTP answer in between (clearGone ends a run). Disabling
   * holds its queued deliveries, to be sent again when it is enabled. True when it disabled it.
   */
  async disableGone(t: Transaction, scope: Scope, id: string, now: Date, windowMs: number): Promise<boolean> {
    const where = { id, accountId: scope.accountId, mode: scope.mode, status: 'enabled', deletedAt: null };
    await WebhookEndpointModel.update({ goneSince: now }, { where: { ...where, goneSince: null }, transaction: t });
    const [changed] = await WebhookEndpointModel.update(
      { status: 'disabled', disabledReason: 'gone', updatedAt: now },
      { where: { ...where, goneSince: { [Op.lte]: new Date(now.getTime() - windowMs) } }, transaction: t },
    );
    if (changed) await this.holdPending(t, id, now, 'endpoint gone (HTTP 410 for the gone window)');
    return changed === 1;
  }

  /** The receiver answered something other than 410: a run of 410s, if any, is over. */
  async clearGone(t: Transaction, scope: Scope, id: string): Promise<void> {
    await WebhookEndpointModel.update(
      { goneSince: null },
      { where: { id, accountId: scope.accountId, mode: scope.mode, goneSince: { [Op.ne]: null } }, transaction: t },
    );
  }

  /**
   * Queued deliveries of an endpoint that was disabled wait for it to be enabled again. Those in
   * flight are held too; their attempt still settles them (a 2xx as delivered, a failure held).
   */
  private async holdPending(t: Transaction, endpointId: string, now: Date, reason: string): Promise<void> {
    await WebhookDeliveryModel.update({ status: 'held', lastError: reason, updatedAt: now }, { where: { endpointId, status: 'pending' }, transaction: t });
  }

  /**
   * Enabled again: held deliveries are due at once, each with a fresh retry window. The lease of
   * one still in flight is kept, so its attempt settles it as usual and it is not sent twice.
   */
  private async requeueHeld(t: Transaction, endpointId: string, now: Date): Promise<void> {
    await WebhookDeliveryModel.update(
      { status: 'pending', nextAttemptAt: now, firstAttemptAt: null, lastError: null, updatedAt: now },
      { where: { endpointId, status: 'held' }, transaction: t },
    );
  }

  /** A deleted endpoint's queued and held deliveries are given up; ones in flight settle as not the owner. */
  private async abandonPending(t: Transaction, endpointId: string, now: Date, reason: string): Promise<void> {
    await WebhookDeliveryModel.update(
      { status: 'abandoned', lastError: reason, updatedAt: now },
      { where: { endpointId, status: { [Op.in]: ['pending', 'held'] } }, transaction: t },
    );
  }

  /**
   * https only, no credentials; the host must resolve to public addresses only, except in test mode
   * with WEBHOOK_ALLOW_PRIVATE; live mode allows only ports 443 and 8443.
   */
  private async checkUrl(url: string, mode: RequestContext['mode']): Promise<void> {
    const checked = await checkWebhookUrl(url, { livemode: mode === 'live', allowPrivate: this.options.allowPrivate, resolve: this.options.resolveHost });
    if (!checked.ok) throw invalidParameter('url', `Invalid 'url': ${checked.reason}${privateAddressHint(checked.reason, mode)}`);
  }
}

type EndpointRecord = Pick<
  WebhookEndpointModel, 'id' | 'mode' | 'url' | 'events' | 'description' | 'status' | 'disabledReason' | 'createdAt' | 'updatedAt'
>;

function endpointView(endpoint: EndpointRecord): WebhookEndpoint {
  return {
    id: endpoint.id,
    object: 'webhook_endpoint',
    livemode: endpoint.mode === 'live',
    url: endpoint.url,
    events: readJson<string[]>(endpoint.events, []),
    description: endpoint.description ?? null,
    status: endpoint.status,
    disabledReason: endpoint.disabledReason ?? null,
    createdAt: endpoint.createdAt.toISOString(),
    updatedAt: endpoint.updatedAt.toISOString(),
  };
}

/** A raw row of a list page. */
export function toApiEndpoint(row: EndpointRow): WebhookEndpoint {
  return endpointView({
    id: row.id, mode: row.mode as WebhookEndpointModel['mode'], url: row.url, events: row.events, description: row.description,
    status: row.status as EndpointStatus, disabledReason: row.disabled_reason,
    createdAt: readTime(row.created_at) as Date, updatedAt: readTime(row.updated_at) as Date,
  });
}

/** A developer pointing a test-mode endpoint at their own machine is told how the operator allows it. */
function privateAddressHint(reason: string, mode: RequestContext['mode']): string {
  if (mode !== 'test' || !/ address$/.test(reason)) return '';
  return '; for local development in test mode, start Payorch with WEBHOOK_ALLOW_PRIVATE=true (see docs/webhooks.md)';
}
