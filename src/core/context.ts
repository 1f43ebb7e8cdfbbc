import type { Transaction } from 'sequelize';
import type { Clock } from './clock';
import { DomainError } from './errors';

export type Mode = 'test' | 'live';

/** Who is acting, in which mode, and on which clock; every service call takes one. */
export interface RequestContext {
  accountId: string;
  mode: Mode;
  permissions: string[];
  requestId: string;
  keyId?: string;
  clock: Clock;
  transaction?: Transaction;
}

/**
 * The context of work no request asked for (recovery settling a payment or refund, jobs): every
 * permission, on the account and mode the work belongs to, at a fixed `now`.
 */
export function systemContext(accountId: string, mode: Mode, now: Date, requestId: string): RequestContext {
  return { accountId, mode, permissions: ['*'], requestId, clock: { now: () => now } };
}

export type Access = 'read' | 'write';

export function hasPermission(permissions: string[], resource: string, access: Access): boolean {
  if (permissions.includes('*')) return true;
  if (permissions.includes(`${resource}:write`)) return true;
  return access === 'read' && permissions.includes(`${resource}:read`);
}

export function requirePermission(ctx: RequestContext, resource: string, access: Access): void {
  if (!hasPermission(ctx.permissions, resource, access)) {
    throw new DomainError(
      'permission_denied',
      `This API key does not have the '${resource}:${access}' permission`,
    );
  }
}

export const PERMISSION_RESOURCES = [
  'account', 'customers', 'products', 'prices', 'payments', 'refunds', 'gateways', 'routing', 'fx_rates',
  'events', 'webhook_endpoints', 'api_keys', 'checkout_sessions', 'payment_links',
  'subscriptions', 'invoices', 'test_clocks', 'tax_rates', 'exports',
] as const;
