import type { Transaction } from 'sequelize';
import type { Clock } from './clock';
import { DomainError } from './errors';
import type { DocumentKey, IdempotencyHandle } from './idempotency';

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
  /** Set by a service whose response carries a secret: it is then stored sealed, if at all. */
  sensitiveResponse?: boolean;
  /** An Idempotency-Key the service claims and completes in its own writes (see IdempotencyHandle). */
  idempotency?: IdempotencyHandle;
  /** A GraphQL request's Idempotency-Key, on which creating mutations record their object. */
  documentKey?: DocumentKey;
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
  'customers', 'products', 'prices', 'payments', 'refunds', 'gateways', 'routing', 'fx_rates',
  'events', 'webhook_endpoints', 'api_keys', 'checkout_sessions', 'payment_links',
  'subscriptions', 'invoices', 'test_clocks',
] as const;
