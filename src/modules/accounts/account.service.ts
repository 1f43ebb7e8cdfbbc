import { createHash } from 'node:crypto';
import type { Database } from '../../db/database';
import { isoTime, readJson } from '../../db/database';
import { AccountModel } from './account.model';
import { createKeyInput, listKeysInput, newAccountPartyInput, permissionsSchema, updateAccountInput } from './account.inputs';
import { readAddress, storeAddress, type PostalAddress } from '../../core/parties';

export { permissionsSchema } from './account.inputs';
import { ApiKeyModel } from './api-key.model';
import { AccountStore } from './account.store';
import { lockAccount } from '../../db/account-lock';
import type { Clock } from '../../core/clock';
import type { Mode, RequestContext } from '../../core/context';
import { hasPermission, requirePermission, type Access } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId, randomBase62 } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { IdempotencyService } from '../idempotency/idempotency.service';

export interface AuthenticatedKey {
  keyId: string;
  accountId: string;
  mode: Mode;
  permissions: string[];
  rateLimitPerMinute: number | null;
}

export interface ApiKeyView {
  id: string;
  object: 'api_key';
  livemode: boolean;
  name: string | null;
  permissions: string[];
  keyHint: string;
  revoked: boolean;
  revokedAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** Present only in the response that created the key. */
  secret?: string;
}

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Keys carry 256 bits after the prefix (43 base62 characters). */
function generateSecret(mode: Mode): string {
  return `sk_${mode}_${randomBase62(43)}`;
}

/**
 * Active (not revoked) keys an account may hold, both modes together. The rate limit is the
 * account's in the key's mode whatever key is used; the cap keeps key lookups and the key list
 * bounded.
 */
export const MAX_ACTIVE_KEYS = 100;

/** At most this many verified keys are remembered (the oldest goes first). */
const KEY_CACHE_MAX = 10_000;

/** The account's own settings (API.md §3). */
export interface AccountSettings {
  id: string;
  object: 'account';
  livemode: boolean;
  name: string;
  invoicePrefix: string;
  dunningRetryDays: number[];
  rateLimitPerMinute: number | null;
  publicDeclinesPerHour: number;
  /** The seller's block on invoices (API.md §3). */
  address: PostalAddress | null;
  taxId: string | null;
  supportEmail: string | null;
  createdAt: string;
  updatedAt: string;
}

/** What an invoice of the account needs: its prefix, retry days and the seller's block customers see. */
export interface AccountInvoicing {
  name: string;
  invoicePrefix: string;
  dunningRetryDays: number[];
  address: PostalAddress | null;
  taxId: string | null;
  supportEmail: string | null;
}

function toAccountSettings(row: AccountModel, mode: Mode): AccountSettings {
  return {
    id: row.id, object: 'account', livemode: mode === 'live', name: row.name, invoicePrefix: row.invoicePrefix,
    dunningRetryDays: JSON.parse(row.dunningRetryDays) as number[], rateLimitPerMinute: row.rateLimitPerMinute ?? null,
    publicDeclinesPerHour: row.publicDeclinesPerHour,
    address: readAddress(row.address), taxId: row.taxId ?? null, supportEmail: row.supportEmail ?? null,
    createdAt: new Date(row.createdAt).toISOString(), updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

export class AccountService {
  /**
   * Verified keys by hash, each for `keyCacheMs` of real time: a busy key costs one lookup per
   * period instead of one per request. Revocation and rate-limit changes made through this
   * process drop the entries at once; made elsewhere (another instance, the CLI) they take
   * effect within one period.
   */
  private readonly keyCache = new Map<string, { key: AuthenticatedKey; until: number }>();
  private readonly store: AccountStore;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly idempotency: IdempotencyService,
    private readonly keyCacheMs = 0,
  ) {
    this.store = new AccountStore(db);
  }

  private forgetKeys(match: (key: AuthenticatedKey) => boolean): void {
    for (const [hash, entry] of this.keyCache) if (match(entry.key)) this.keyCache.delete(hash);
  }

  async createAccount(input: { name: string; rateLimitPerMinute?: number | null; address?: unknown; taxId?: string; supportEmail?: string }): Promise<{
    accountId: string;
    testKey: ApiKeyView;
    liveKey: ApiKeyView;
  }> {
    if (input.rateLimitPerMinute != null && (!Number.isInteger(input.rateLimitPerMinute) || input.rateLimitPerMinute < 1)) {
      throw new DomainError('invalid_parameter', 'rate limit must be a positive integer', 'rateLimitPerMinute');
    }
    // The seller's block, checked as PATCH /v1/account checks it (the CLI names the option of a refused param).
    const given = { address: input.address, taxId: input.taxId, supportEmail: input.supportEmail };
    const party = parseInput(newAccountPartyInput, Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)));
    const now = this.clock.now();
    const accountId = newId('acct');
    return this.db.transaction(async (transaction) => {
      await AccountModel.create(
        {
          id: accountId, name: input.name, rateLimitPerMinute: input.rateLimitPerMinute ?? null,
          address: storeAddress(party.address), taxId: party.taxId ?? null, supportEmail: party.supportEmail ?? null, createdAt: now, updatedAt: now,
        },
        { transaction },
      );
      const testKey = await this.insertKey(accountId, 'test', ['*'], 'Default test key', transaction);
      const liveKey = await this.insertKey(accountId, 'live', ['*'], 'Default live key', transaction);
      return { accountId, testKey, liveKey };
    });
  }

  /** `GET /v1/account`: the account's own settings (needs `account:read`). */
  async settings(ctx: RequestContext): Promise<AccountSettings> {
    requirePermission(ctx, 'account', 'read');
    const row = await AccountModel.findByPk(ctx.accountId, { raw: true });
    if (!row) throw notFound('account', ctx.accountId);
    return toAccountSettings(row as unknown as AccountModel, ctx.mode);
  }

  /** `PATCH /v1/account` `{name?, invoicePrefix?, dunningRetryDays?, publicDeclinesPerHour?, address?, taxId?, supportEmail?}` (needs `account:write`); the rate limit is the CLI's. */
  async updateSettings(ctx: RequestContext, input: unknown): Promise<AccountSettings> {
    requirePermission(ctx, 'account', 'write');
    const raw = input as Record<string, unknown> | null;
    if (raw && typeof raw === 'object' && 'rateLimitPerMinute' in raw) {
      throw new DomainError('invalid_parameter', 'rateLimitPerMinute is read-only here; change it with `payorch accounts set-rate-limit`', 'rateLimitPerMinute');
    }
    const data = parseInput(updateAccountInput, input);
    return this.db.transaction(async (transaction) => {
      const row = await AccountModel.findByPk(ctx.accountId, { transaction, lock: this.db.rowLock(transaction) });
      if (!row) throw notFound('account', ctx.accountId);
      const changes: Record<string, unknown> = {};
      if (data.name !== undefined) changes.name = data.name;
      if (data.invoicePrefix !== undefined) changes.invoicePrefix = data.invoicePrefix;
      if (data.dunningRetryDays !== undefined) changes.dunningRetryDays = JSON.stringify(data.dunningRetryDays);
      if (data.publicDeclinesPerHour !== undefined) changes.publicDeclinesPerHour = data.publicDeclinesPerHour;
      if (data.address !== undefined) changes.address = storeAddress(data.address);
      if (data.taxId !== undefined) changes.taxId = data.taxId;
      if (data.supportEmail !== undefined) changes.supportEmail = data.supportEmail;
      if (Object.keys(changes).length > 0) await row.update({ ...changes, updatedAt: ctx.clock.now() }, { transaction });
      return toAccountSettings(row.get({ plain: true }) as AccountModel, ctx.mode);
    });
  }

  /** What an invoice of the account needs: its prefix and the seller's block customers see (name, address, tax id, support e-mail). */
  async invoicing(accountId: string, transaction?: import('sequelize').Transaction): Promise<AccountInvoicing> {
    const row = await AccountModel.findByPk(accountId, { attributes: ['name', 'invoicePrefix', 'dunningRetryDays', 'address', 'taxId', 'supportEmail'], raw: true, transaction });
    if (!row) throw notFound('account', accountId);
    return {
      name: row.name, invoicePrefix: row.invoicePrefix, dunningRetryDays: JSON.parse(row.dunningRetryDays) as number[],
      address: readAddress(row.address), taxId: row.taxId ?? null, supportEmail: row.supportEmail ?? null,
    };
  }

  /**
   * The account as an event of the account carries it (what `GET /v1/account` answers in that
   * mode). Inside a transaction, read in it: on SQLite a read on the default connection would queue
   * behind that connection's write waiting for the lock this transaction holds.
   */
  async eventObject(accountId: string, mode: Mode, transaction?: import('sequelize').Transaction): Promise<AccountSettings> {
    const row = await AccountModel.findByPk(accountId, { raw: true, transaction });
    if (!row) throw notFound('account', accountId);
    return toAccountSettings(row as unknown as AccountModel, mode);
  }

  /** The account's name as customers see it (hosted pages, e-mails); empty for an unknown account. */
  async displayName(accountId: string): Promise<string> {
    const account = await AccountModel.findByPk(accountId, { attributes: ['name'], raw: true });
    return account?.name ?? '';
  }

  async countAccounts(): Promise<number> {
    return AccountModel.count();
  }

  async setRateLimit(accountId: string, rateLimitPerMinute: number | null): Promise<void> {
    const [n] = await AccountModel.update({ rateLimitPerMinute, updatedAt: this.clock.now() }, { where: { id: accountId } });
    if (n === 0) throw notFound('account', accountId);
    this.forgetKeys((k) => k.accountId === accountId);
  }

  /** Administrative (CLI) key creation, outside any request context. */
  async createKeyForAccount(accountId: string, mode: Mode, permissions: string[] = ['*'], name?: string): Promise<ApiKeyView> {
    const perms = parseInput(permissionsSchema, permissions);
    const account = await AccountModel.findByPk(accountId, { raw: true });
    if (!account) throw notFound('account', accountId, 'account');
    return this.db.transaction(async (t) => {
      await this.refuseOverKeyCap(accountId, t);
      return this.insertKey(accountId, mode, perms, name ?? null, t);
    });
  }

  /**
   * Counted under the account's lock, so keys created at once cannot all pass the same count. A
   * refusal rolls the Idempotency-Key's claim back with the transaction: revoke a key and send
   * the request again.
   */
  private async refuseOverKeyCap(accountId: string, transaction: import('sequelize').Transaction): Promise<void> {
    await lockAccount(this.db, transaction, accountId);
    const active = await ApiKeyModel.count({ where: { accountId, revokedAt: null }, transaction });
    if (active >= MAX_ACTIVE_KEYS) {
      throw new DomainError('limit_exceeded', `At most ${MAX_ACTIVE_KEYS} active API keys per account (both modes); revoke one first`);
    }
  }

  /** Administrative (CLI): every account, oldest first, so lost start-up output is recoverable. */
  async listAccounts(): Promise<Array<{ id: string; name: string; rateLimitPerMinute: number | null; createdAt: string }>> {
    const rows = await AccountModel.findAll({ order: [['createdAt', 'ASC'], ['id', 'ASC']], raw: true });
    return rows.map((a) => ({ id: a.id, name: a.name, rateLimitPerMinute: a.rateLimitPerMinute ?? null, createdAt: isoTime(a.createdAt) as string }));
  }

  /** Administrative (CLI): an account's keys in both modes, oldest first (hints only, never a secret). */
  async listKeysForAccount(accountId: string): Promise<ApiKeyView[]> {
    if (!(await AccountModel.findByPk(accountId, { raw: true }))) throw notFound('account', accountId, 'account');
    const rows = await ApiKeyModel.findAll({ where: { accountId }, order: [['createdAt', 'ASC'], ['id', 'ASC']], raw: true });
    return rows.map((row) => toKeyView(row as unknown as Record<string, unknown>));
  }

  async revokeKeyById(keyId: string): Promise<ApiKeyView> {
    return this.revoke({ id: keyId }, this.clock.now());
  }

  /**
   * Revokes once: the first revocation's time stands, and every concurrent or later revocation
   * answers with it (one conditional UPDATE, then the row as it is).
   */
  private async revoke(where: { id: string; accountId?: string; mode?: Mode }, now: Date): Promise<ApiKeyView> {
    await ApiKeyModel.update({ revokedAt: now, updatedAt: now }, { where: { ...where, revokedAt: null } });
    this.forgetKeys((k) => k.keyId === where.id);
    const key = await ApiKeyModel.findOne({ where });
    if (!key) throw notFound('api_key', where.id);
    return toKeyView(key.get({ plain: true }));
  }

  async createKey(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<ApiKeyView> {
    requirePermission(ctx, 'api_keys', 'write');
    const parsed = parseInput(createKeyInput, input);
    const wanted = parsed.permissions ?? ['*'];
    // A key can hand out only what it holds itself: no escalation through api_keys:write.
    const [i] = beyondHeld(ctx.permissions, wanted);
    if (i !== undefined) throw new DomainError('permission_denied', `This API key cannot grant '${wanted[i]}'`, `permissions[${i}]`);
    return this.db.transaction((t) =>
      this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.createApiKey, async () => {
        await this.refuseOverKeyCap(ctx.accountId, t);
        return this.insertKey(ctx.accountId, ctx.mode, wanted, parsed.name ?? null, t);
      }));
  }

  async listKeys<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<ApiKeyView, O>> {
    requirePermission(ctx, 'api_keys', 'read');
    return this.store.listKeys(ctx, parseInput(listKeysInput, query), toKeyView, options);
  }

  /**
   * A key may revoke only keys whose permissions are within its own (itself included), as it may
   * create only those: otherwise a key holding api_keys:write could cut off a wider one.
   */
  async revokeKey(ctx: RequestContext, id: string): Promise<ApiKeyView> {
    requirePermission(ctx, 'api_keys', 'write');
    const where = { id, accountId: ctx.accountId, mode: ctx.mode };
    // A key's permissions never change once created: checking them before the revocation holds.
    const target = await ApiKeyModel.findOne({ where, attributes: ['permissions'], raw: true });
    if (!target) throw notFound('api_key', id);
    const held = readJson<string[]>(target.permissions, []);
    const beyond = beyondHeld(ctx.permissions, held).map((i) => (held[i] === '*' ? "'*' (every permission)" : `'${held[i]}'`));
    if (beyond.length > 0) {
      throw new DomainError('permission_denied', `This API key cannot revoke ${id}: that key holds ${beyond.join(', ')}, beyond this key's permissions`);
    }
    return this.revoke(where, ctx.clock.now());
  }

  /** One indexed lookup by the key's hash; revoked and unknown keys are indistinguishable. */
  async authenticate(secret: string): Promise<AuthenticatedKey | null> {
    if (!/^sk_(test|live)_[0-9A-Za-z]{20,100}$/.test(secret)) return null;
    const hash = hashApiKey(secret);
    const cached = this.keyCache.get(hash);
    if (cached && cached.until > performance.now()) return cached.key;
    const key = await this.lookupKey(secret, hash);
    if (key && this.keyCacheMs > 0) {
      this.keyCache.delete(hash);
      if (this.keyCache.size >= KEY_CACHE_MAX) this.keyCache.delete(this.keyCache.keys().next().value as string);
      this.keyCache.set(hash, { key, until: performance.now() + this.keyCacheMs });
    } else if (!key) {
      this.keyCache.delete(hash);
    }
    return key;
  }

  private async lookupKey(secret: string, hash: string): Promise<AuthenticatedKey | null> {
    const row = await this.store.lookupKey(hash);
    if (!row || row.revoked_at) return null;
    // The prefix and the stored mode must agree; a mismatch means a tampered row.
    if (!secret.startsWith(`sk_${row.mode}_`)) return null;
    return {
      keyId: row.id,
      accountId: row.account_id,
      mode: row.mode,
      permissions: readJson<string[]>(row.permissions, []),
      rateLimitPerMinute: row.rate_limit_per_minute,
    };
  }

  private async insertKey(
    accountId: string,
    mode: Mode,
    permissions: string[],
    name: string | null,
    transaction: import('sequelize').Transaction,
  ): Promise<ApiKeyView> {
    const secret = generateSecret(mode);
    const now = this.clock.now();
    const created = await ApiKeyModel.create(
      {
        id: newId('key'),
        accountId,
        mode,
        keyHash: hashApiKey(secret),
        keyHint: `sk_${mode}_…${secret.slice(-4)}`,
        name,
        permissions: JSON.stringify(permissions),
        revokedAt: null,
        createdAt: now,
        updatedAt: now,
      },
      { transaction },
    );
    return { ...toKeyView(created.get({ plain: true })), secret };
  }

  /** Several keys of the caller's account and mode by id (GraphQL's `node`, batched), as `listKeys` shows them: never the secret. */
  async findKeys(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, ApiKeyView>> {
    requirePermission(ctx, 'api_keys', 'read');
    const rows = await ApiKeyModel.findAll({ where: { id: [...new Set(ids)], accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    return new Map(rows.map((row) => [row.id, toKeyView(row as unknown as Record<string, unknown>)]));
  }
}

/**
 * The positions in `permissions` of those `held` does not cover (`<resource>:write` covers
 * `<resource>:read`; only `*` covers `*`): what a key may not grant, nor revoke a key holding.
 */
function beyondHeld(held: string[], permissions: string[]): number[] {
  const beyond: number[] = [];
  permissions.forEach((permission, i) => {
    const [resource, access] = permission.split(':') as [string, Access | undefined];
    const covered = permission === '*' ? held.includes('*') : hasPermission(held, resource, access as Access);
    if (!covered) beyond.push(i);
  });
  return beyond;
}

function toKeyView(row: Record<string, unknown>): ApiKeyView {
  return {
    id: row.id as string,
    object: 'api_key',
    livemode: row.mode === 'live',
    name: (row.name as string | null) ?? null,
    permissions: readJson<string[]>(row.permissions, []),
    keyHint: row.keyHint as string,
    revoked: Boolean(row.revokedAt),
    revokedAt: isoTime(row.revokedAt),
    createdAt: isoTime(row.createdAt) as string,
    updatedAt: isoTime(row.updatedAt) as string,
  };
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'account.public_declines_exceeded': AccountSettings;
  }
}
