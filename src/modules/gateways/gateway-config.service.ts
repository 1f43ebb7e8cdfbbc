import type { LookupFunction } from 'node:net';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readBool, readJson, readTime } from '../../db/database';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { parseInput } from '../../core/validation';
import { type Counted, type ListOptions, type PageFor } from '../../core/pagination';
import type { SecretBox } from '../../core/crypto';
import type { Gateway } from '../../connectors/connector';
import type { Metrics } from '../../observability/metrics';
import { measuredGateway } from './measured-gateway';
import { GatewayConfigError, createGateway, validateGatewayConfig, withStorableResults } from '../../connectors/registry';
import { STRIPE_DEFAULT_BASE_URL } from '../../connectors/stripe/stripe.gateway';
import { checkWebhookUrl, type ResolveHost } from '../../core/network/address-policy';
import { GatewayModel } from './gateway.model';
import { GatewayStore, type GatewayRow } from './gateway.store';
import { createGatewayInput, listGatewaysInput, updateGatewayInput } from './gateway.inputs';

export { listGatewaysInput } from './gateway.inputs';

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

/**
 * A connector's base URL receives the gateway secret and raw card data, so it may only be
 * changed in test mode (local fakes, emulators: the only place the Stripe connector's plain
 * http to a loopback address can be set), and changing it needs the credentials sent again.
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

/**
 * Where a test-mode connector may be pointed. Unless the operator allows private addresses
 * (GATEWAY_ALLOW_PRIVATE_BASE_URL, for a local emulator), a base URL other than Stripe's passes
 * the webhook URL policy: https, and every address its host resolves to public. The connector
 * checks again at each connection.
 */
async function checkBaseUrlAddress(settings: Record<string, unknown> | undefined, options: GatewayConnectorOptions): Promise<void> {
  const baseUrl = settings?.baseUrl;
  if (options.allowPrivateBaseUrl || typeof baseUrl !== 'string' || baseUrl === STRIPE_DEFAULT_BASE_URL) return;
  const checked = await checkWebhookUrl(baseUrl, { livemode: false, allowPrivate: false, resolve: options.resolveHost });
  if (checked.ok) return;
  const hint = / address$|must use https$/.test(checked.reason)
    ? '; to reach a local Stripe emulator, start Payorch with GATEWAY_ALLOW_PRIVATE_BASE_URL=true (test mode only)'
    : '';
  throw new DomainError('invalid_parameter', `Invalid 'settings.baseUrl': ${checked.reason}${hint}`, 'settings.baseUrl');
}

function configError(err: unknown): never {
  if (err instanceof GatewayConfigError) throw new DomainError(err.code, err.message, err.param);
  throw err;
}

export interface GatewayConnectorOptions {
  timeoutMs?: number;
  ca?: string;
  clock?: { now(): Date };
  /** GATEWAY_ALLOW_PRIVATE_BASE_URL. */
  allowPrivateBaseUrl?: boolean;
  /** Replace DNS for the base-URL checks at registration and at connect time (tests); the policy still applies. */
  resolveHost?: ResolveHost;
  lookup?: LookupFunction;
  /** The service's public address (PublicUrls.base): the simulator serves its 3-D Secure challenge page there. */
  publicBaseUrl?: () => string;
  /** Times and counts every connector call per gateway when enabled. */
  metrics?: Metrics;
}

export class GatewayConfigService {
  private readonly instances = new Map<string, { version: string; gateway: Gateway; captureWindowDays?: number }>();
  private builtin?: Gateway;
  private readonly changeListeners: Array<(accountId: string, mode: string) => void> = [];
  private readonly removalGuards: Array<(ctx: RequestContext, id: string, t: Transaction) => Promise<boolean>> = [];
  private readonly store: GatewayStore;

  /**
   * A guard answering true keeps a gateway from being deleted (routing rules still name it). It
   * runs in the deleting transaction, after the gateway's row is locked.
   */
  guardRemoval(inUse: (ctx: RequestContext, id: string, t: Transaction) => Promise<boolean>): void {
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
    private readonly connectorOptions: GatewayConnectorOptions = {},
    /** Creates answer their Idempotency-Key through it. */
    private readonly idempotency: IdempotencyService,
  ) {
    this.store = new GatewayStore(db);
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<GatewayView> {
    requirePermission(ctx, 'gateways', 'write');
    const data = parseInput(createGatewayInput, input);
    const credentials = data.credentials ?? {};
    const settings = data.settings ?? {};
    guardBaseUrl(ctx, settings, true);
    try {
      validateGatewayConfig(data.type, credentials, settings);
    } catch (err) {
      configError(err);
    }
    // A retry of a create that succeeded replays it, though the host may resolve elsewhere by now.
    await this.idempotency.beforeClaim(idem, () => checkBaseUrlAddress(settings, this.connectorOptions));
    const now = ctx.clock.now();
    const view = await this.db.transaction((transaction) => {
      const write = async () => gatewayView(await GatewayModel.create({
        id: newId('gw'), accountId: ctx.accountId, mode: ctx.mode, name: data.name, type: data.type,
        credentialsSealed: Object.keys(credentials).length ? this.box.seal(credentials) : null,
        settings: JSON.stringify(settings), currencies: data.currencies ? JSON.stringify(data.currencies) : null,
        enabled: data.enabled ?? true, deletedAt: null, createdAt: now, updatedAt: now,
      }, { transaction }));
      return this.idempotency.once(transaction, idem, IDEMPOTENT_OPERATIONS.createGateway, write);
    });
    this.changed(ctx);
    return view;
  }

  async retrieve(ctx: RequestContext, id: string): Promise<GatewayView> {
    requirePermission(ctx, 'gateways', 'read');
    return gatewayView(await this.find(ctx, id));
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<GatewayView, O>> {
    requirePermission(ctx, 'gateways', 'read');
    return this.store.list(ctx, parseInput(listGatewaysInput, query), toView, options);
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<GatewayView> {
    requirePermission(ctx, 'gateways', 'write');
    const data = parseInput(updateGatewayInput, input);
    // Resolved before the transaction: a slow DNS answer must not hold the gateway's lock. Only a
    // Stripe gateway has a base URL (another type refuses the setting below); live mode refuses
    // it whatever its address.
    if (ctx.mode === 'test' && data.settings?.baseUrl !== undefined && (await this.find(ctx, id)).type === 'stripe') {
      await checkBaseUrlAddress(data.settings, this.connectorOptions);
    }
    // Read, validate and write under one lock: the credentials are checked against the settings
    // they will be used with, not against ones a concurrent update is replacing.
    const { view, changed } = await this.db.transaction(async (transaction) => {
      const gateway = await this.find(ctx, id, transaction);
      const changes: Partial<Pick<GatewayModel, 'name' | 'credentialsSealed' | 'settings' | 'currencies' | 'enabled' | 'updatedAt'>> = {};
      guardBaseUrl(ctx, data.settings, data.credentials !== undefined, readJson<Record<string, unknown>>(gateway.settings, {}));
      if (data.credentials !== undefined || data.settings !== undefined) {
        const credentials = data.credentials ?? (gateway.credentialsSealed ? this.box.open<Record<string, string>>(gateway.credentialsSealed) : {});
        const settings = data.settings ?? readJson<Record<string, unknown>>(gateway.settings, {});
        try {
          validateGatewayConfig(gateway.type, credentials, settings);
        } catch (err) {
          configError(err);
        }
        if (data.credentials !== undefined) changes.credentialsSealed = Object.keys(credentials).length ? this.box.seal(credentials) : null;
        if (data.settings !== undefined) changes.settings = JSON.stringify(settings);
      }
      if (data.name !== undefined) changes.name = data.name;
      if (data.currencies !== undefined) changes.currencies = data.currencies ? JSON.stringify(data.currencies) : null;
      if (data.enabled !== undefined) changes.enabled = data.enabled;
      if (Object.keys(changes).length === 0) return { view: gatewayView(gateway), changed: false };
      changes.updatedAt = ctx.clock.now();
      await gateway.update(changes, { transaction });
      return { view: gatewayView(gateway), changed: true };
    });
    if (!changed) return view;
    this.instances.delete(id);
    this.changed(ctx);
    return view;
  }

  /** Soft delete: past payments keep a gateway to refund through; routing may not name it. */
  async remove(ctx: RequestContext, id: string): Promise<GatewayView> {
    requirePermission(ctx, 'gateways', 'write');
    // The row lock orders this against a rule replace naming the gateway (RoutingService.replace
    // locks the gateways it names): the guards read the rules only once that one has committed.
    // Concurrent deletes of one gateway: the first deletes it, the others find none (404).
    const gateway = await this.db.transaction(async (transaction) => {
      const gateway = await this.find(ctx, id, transaction);
      const inUse = await Promise.all(this.removalGuards.map((guard) => guard(ctx, id, transaction)));
      if (inUse.some(Boolean)) {
        throw new DomainError('gateway_in_use', 'The routing rules still use this gateway; remove it from them first', 'id');
      }
      const now = ctx.clock.now();
      await gateway.update({ deletedAt: now, enabled: false, updatedAt: now }, { transaction });
      return gateway;
    });
    this.instances.delete(id);
    this.changed(ctx);
    return gatewayView(gateway);
  }

  /** Every live (not deleted) gateway of the account and mode, for routing. */
  async routable(ctx: RequestContext): Promise<RoutableGateway[]> {
    const gateways = await GatewayModel.findAll({
      attributes: ['id', 'type', 'enabled', 'currencies'],
      where: { accountId: ctx.accountId, mode: ctx.mode, deletedAt: null },
      order: [['createdAt', 'ASC'], ['id', 'ASC']],
    });
    return gateways.map((g) => ({ id: g.id, type: g.type, enabled: g.enabled, currencies: g.currencies ? readJson<string[]>(g.currencies, []) : null }));
  }

  /**
   * Which of `ids` are live gateways, each locked until `transaction` ends so none can be deleted
   * meanwhile (remove locks the row first). Locked in id order: two callers never deadlock.
   */
  async lockLive(ctx: RequestContext, ids: string[], transaction: Transaction): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const gateways = await GatewayModel.findAll({
      attributes: ['id'],
      where: { id: ids, accountId: ctx.accountId, mode: ctx.mode, deletedAt: null },
      order: [['id', 'ASC']],
      transaction,
      lock: this.db.rowLock(transaction),
    });
    return new Set(gateways.map((g) => g.id));
  }

  /** A connector instance for a gateway of this account (deleted ones included, for refunds). */
  async connector(ctx: { accountId: string; mode: string }, id: string): Promise<{ gateway: Gateway; type: string; captureWindowDays?: number }> {
    if (id === BUILTIN_SIMULATOR_ID) {
      this.builtin ??= this.measured(BUILTIN_SIMULATOR_ID, withStorableResults(
        createGateway('simulator', { gatewayId: BUILTIN_SIMULATOR_ID, credentials: {}, settings: {}, clock: this.connectorOptions.clock, publicBaseUrl: this.connectorOptions.publicBaseUrl }),
      ));
      return { gateway: this.builtin, type: 'simulator' };
    }
    const row = await this.store.forConnector(ctx, id);
    if (!row) throw new DomainError('no_gateway_available', `Gateway ${id} is not configured`);
    const version = String(isoTime(row.updated_at));
    const cached = this.instances.get(id);
    if (cached && cached.version === version) return { gateway: cached.gateway, type: row.type, captureWindowDays: cached.captureWindowDays };
    const gateway = this.measured(id, withStorableResults(createGateway(row.type, {
      gatewayId: id,
      credentials: row.credentials_sealed ? this.box.open<Record<string, string>>(row.credentials_sealed) : {},
      settings: readJson<Record<string, unknown>>(row.settings, {}),
      httpsAgentOptions: this.connectorOptions.ca ? { ca: this.connectorOptions.ca } : undefined,
      timeoutMs: this.connectorOptions.timeoutMs,
      clock: this.connectorOptions.clock,
      publicBaseUrl: this.connectorOptions.publicBaseUrl,
      allowPrivateAddresses: this.connectorOptions.allowPrivateBaseUrl,
      lookup: this.connectorOptions.lookup,
    })));
    const window = readJson<Record<string, unknown>>(row.settings, {}).captureWindowDays;
    const captureWindowDays = typeof window === 'number' ? window : undefined;
    this.instances.set(id, { version, gateway, captureWindowDays });
    return { gateway, type: row.type, captureWindowDays };
  }

  private measured(id: string, gateway: Gateway): Gateway {
    const metrics = this.connectorOptions.metrics;
    return metrics?.enabled ? measuredGateway(gateway, id, metrics) : gateway;
  }

  /** A live gateway of the caller's account and mode; locked for the transaction when given one. */
  private async find(ctx: RequestContext, id: string, transaction?: Transaction): Promise<GatewayModel> {
    const gateway = await GatewayModel.findOne({
      where: { id, accountId: ctx.accountId, mode: ctx.mode, deletedAt: null },
      transaction,
      lock: this.db.rowLock(transaction),
    });
    if (!gateway) throw notFound('gateway', id);
    return gateway;
  }

  /**
   * Several gateways by id (GraphQL's `node` and links, batched), as `retrieve` finds them: a
   * deleted one, the built-in simulator (no row) and another account's or mode's are not found.
   */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, GatewayView>> {
    requirePermission(ctx, 'gateways', 'read');
    return new Map((await this.store.findMany(ctx, ids)).map((row) => [row.id, toView(row)]));
  }
}

type GatewayRecord = Pick<GatewayModel, 'id' | 'mode' | 'name' | 'type' | 'credentialsSealed' | 'settings' | 'currencies' | 'enabled' | 'createdAt' | 'updatedAt'>;

function gatewayView(gateway: GatewayRecord): GatewayView {
  return {
    id: gateway.id,
    object: 'gateway',
    livemode: gateway.mode === 'live',
    name: gateway.name,
    type: gateway.type,
    enabled: gateway.enabled,
    currencies: gateway.currencies ? readJson<string[]>(gateway.currencies, []) : null,
    settings: readJson<Record<string, unknown>>(gateway.settings, {}),
    credentialsSet: Boolean(gateway.credentialsSealed),
    createdAt: gateway.createdAt.toISOString(),
    updatedAt: gateway.updatedAt.toISOString(),
  };
}

/** A raw row of a list page. */
function toView(row: GatewayRow): GatewayView {
  return gatewayView({
    id: row.id, mode: row.mode as GatewayModel['mode'], name: row.name, type: row.type, credentialsSealed: row.credentials_sealed,
    settings: row.settings, currencies: row.currencies, enabled: readBool(row.enabled),
    createdAt: readTime(row.created_at) as Date, updatedAt: readTime(row.updated_at) as Date,
  });
}
