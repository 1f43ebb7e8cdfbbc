import { Op, col, type Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { readJson, readTime } from '../../db/database';
import { lockAccount } from '../../db/account-lock';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, invalidParameter, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { SecretBox } from '../../core/crypto';
import { checkWebhookUrl, type ResolveHost } from '../../core/network/address-policy';
import { generateWebhookSecret, type SigningSecrets } from './signature';
import { WILDCARD, createEndpointInput, listEndpointsInput, rotateSecretInput, updateEndpointInput } from './webhook.inputs';
import { WebhookEndpointModel } from './webhook-endpoint.model';
import { EVENT_TYPES, missingEventPermission, requireEventTypePermission } from '../events/event.service';
import { WebhookStore, secretsInUse, type EndpointRow, type SealedSecrets } from './webhook.store';
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

type Scope = { accountId: string; mode: string };

export interface EndpointServiceOptions {
  /** Lift the private-address rule in test mode (WEBHOOK_ALLOW_PRIVATE); never in live mode. */
  allowPrivate: boolean;
  /** Replaces DNS resolution of endpoint hosts (tests). */
  resolveHost?: ResolveHost;
  /** Monotonic milliseconds, for how long an opened secret is kept (tests move it). */
  monotonicMs?: () => number;
}

/** Webhook endpoints of an (account, mode): registration, secrets, enable/disable. */
export const MAX_ENDPOINTS = 16;

/** Opened signing secrets kept for deliveries, at most this many (the oldest opened goes first). */
const OPENED_SECRETS = 1024;
/** How long an opened secret is kept after it was last opened: a rotated-away or deleted endpoint's is gone from memory within this. */
export const OPENED_SECRET_MS = 10 * 60_000;

export class WebhookEndpointService {
  private readonly store: WebhookStore;
  /**
   * Secrets opened for deliveries, by sealed text: a backlog to one endpoint opens its secret once
   * instead of once per delivery. A sealed text always opens to the same secret (a rotation seals
   * a new one under a fresh nonce, so it is another key here and the old entry is simply unused).
   * Kept OPENED_SECRET_MS from when each was opened, oldest first out: the plain text of a secret
   * no delivery uses any more (rotated away, its endpoint deleted) does not stay in memory.
   */
  private readonly opened = new Map<string, { secret: string; at: number }>();

  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
    private readonly options: EndpointServiceOptions,
    /** Creates and rotations answer their Idempotency-Key through it. */
    private readonly idempotency: IdempotencyService,
  ) {
    this.store = new WebhookStore(db);
  }

  /** Runs `write` in a transaction under `idem` (see IdempotencyService.once). */
  private once<T>(idem: IdempotencyKey | undefined, operation: IdempotentOperation, write: (t: Transaction) => Promise<T>): Promise<T> {
    return this.db.transaction((t) => this.idempotency.once(t, idem, operation, () => write(t)));
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const data = parseInput(createEndpointInput, input);
    requireSubscribable(ctx, data.events, 'subscribing to');
    await this.idempotency.beforeClaim(idem, () => this.checkUrl(data.url, ctx.mode));
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

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<WebhookEndpoint, O>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    const input = parseInput(listEndpointsInput, query);
    return this.store.listEndpoints(ctx, input, toApiEndpoint, options);
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<WebhookEndpoint> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    const data = parseInput(updateEndpointInput, input);
    const current = await this.row(ctx, id);
    if (data.events !== undefined) requireSubscribable(ctx, data.events, 'subscribing to');
    // A new receiver gets every type the endpoint keeps: the key must be able to read them all.
    else if (data.url !== undefined && data.url !== current.url) requireSubscribable(ctx, readJson<string[]>(current.events, []), 'sending to a new url', 'url');
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
      if (data.events !== undefined && !data.events.includes(WILDCARD)) await this.store.abandonUnsubscribed(transaction, id, data.events, now);
      if (changes.status === 'disabled') await this.store.holdPending(transaction, id, now, 'endpoint disabled');
      if (changes.status === 'enabled') await this.store.requeueHeld(transaction, id, now);
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
      await this.store.abandonPending(transaction, id, now, 'endpoint deleted');
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
    const sealed = await this.store.sealedSigningSecrets(endpointId, now);
    if (!sealed) throw notFound('webhook endpoint', endpointId);
    return this.openSecrets(sealed);
  }

  /** The secrets of a claimed delivery's endpoint as used at `now` (read with the claim). */
  claimedSigningSecrets(secrets: SealedSecrets, now: Date): SigningSecrets {
    const sealed = secretsInUse(secrets, now);
    return { current: this.openCached(sealed.current), previous: sealed.previous === null ? null : this.openCached(sealed.previous) };
  }

  private openCached(sealed: string): string {
    const now = (this.options.monotonicMs ?? performance.now.bind(performance))();
    // Entries are in the order they were opened: the expired ones are at the front.
    for (const [key, entry] of this.opened) {
      if (now - entry.at < OPENED_SECRET_MS) break;
      this.opened.delete(key);
    }
    const kept = this.opened.get(sealed);
    if (kept) return kept.secret;
    const secret = this.openSecret(sealed);
    if (this.opened.size >= OPENED_SECRETS) this.opened.delete(this.opened.keys().next().value as string);
    this.opened.set(sealed, { secret, at: now });
    return secret;
  }

  private openSecrets(sealed: { current: string; previous: string | null }): SigningSecrets {
    return { current: this.openSecret(sealed.current), previous: sealed.previous === null ? null : this.openSecret(sealed.previous) };
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
    if (changed) await this.store.holdPending(t, id, now, 'endpoint gone (HTTP 410 for the gone window)');
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
   * https only, no credentials; the host must resolve to public addresses only, except in test mode
   * with WEBHOOK_ALLOW_PRIVATE; live mode allows only ports 443 and 8443.
   */
  private async checkUrl(url: string, mode: RequestContext['mode']): Promise<void> {
    const checked = await checkWebhookUrl(url, { livemode: mode === 'live', allowPrivate: this.options.allowPrivate, resolve: this.options.resolveHost });
    if (!checked.ok) throw invalidParameter('url', `Invalid 'url': ${checked.reason}${privateAddressHint(checked.reason, mode)}`);
  }

  /** Several endpoints by id (GraphQL's `node` and links, batched), as `retrieve` finds them: deleted ones and another scope's are not found. */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, WebhookEndpoint>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    const rows = await WebhookEndpointModel.findAll({ where: { id: [...new Set(ids)], accountId: ctx.accountId, mode: ctx.mode, deletedAt: null } });
    return new Map(rows.map((endpoint) => [endpoint.id, endpointView(endpoint)]));
  }
}

/**
 * An endpoint receives events' objects in full: each type it subscribes to needs the read
 * permission of that type's resource, and "*" needs them all. 403 naming the entry (or `param`).
 */
function requireSubscribable(ctx: RequestContext, events: string[], doing: string, param?: string): void {
  events.forEach((type, i) => {
    const at = param ?? `events[${i}]`;
    if (type !== WILDCARD) return requireEventTypePermission(ctx, type, doing, at);
    for (const each of EVENT_TYPES) {
      const missing = missingEventPermission(ctx.permissions, each);
      if (missing) {
        throw new DomainError(
          'permission_denied',
          `This API key does not have ${missing}, which ${doing} "*" needs (it includes '${each}' events); list the event types the key may read instead`,
          at,
        );
      }
    }
  });
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
