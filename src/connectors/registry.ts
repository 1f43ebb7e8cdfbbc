import type { LookupFunction } from 'node:net';
import { storableDeep } from '../core/text';
import { z } from 'zod';
import { GatewayConfigError } from './config-error';
import type { Gateway } from './connector';
import { SimulatorGateway } from './simulator/simulator.gateway';
import { STRIPE_DEFAULT_BASE_URL, StripeGateway, stripeBaseUrlProblem } from './stripe/stripe.gateway';

export { GatewayConfigError } from './config-error';

export const GATEWAY_TYPES = ['simulator', 'stripe'] as const;
export type GatewayType = (typeof GATEWAY_TYPES)[number];

export function isGatewayType(type: string): type is GatewayType {
  return (GATEWAY_TYPES as readonly string[]).includes(type);
}

/**
 * Credentials per type: strict for real connectors, so a typo is reported instead of silently
 * ignored. The simulator uses none but keeps whatever strings it is given, sealed like any
 * gateway's, so a test account can exercise write-only credentials without a real gateway.
 */
export const gatewayCredentialsSchemas = {
  simulator: z.record(z.string(), z.string()),
  stripe: z
    .object({
      secretKey: z
        .string({ error: 'must be a Stripe secret key' })
        .regex(/^sk_[0-9A-Za-z_]+$/, { error: "must be a Stripe secret key starting with 'sk_'" }),
    })
    .strict(),
} as const;

/** How long an authorisation waits for its capture at this gateway before the expiry job voids it (default 7). */
const CAPTURE_WINDOW_DAYS = z.number().int().min(1).max(30).optional();

export const gatewaySettingsSchemas = {
  simulator: z
    .object({
      latencyMs: z.number().int().min(0).max(10_000).optional(),
      outage: z.boolean().optional(),
      failureRate: z.number().min(0).max(1).optional(),
      seed: z.number().int().min(0).max(0xffffffff).optional(),
      captureWindowDays: CAPTURE_WINDOW_DAYS,
    })
    .strict(),
  stripe: z
    .object({
      // https; http only to a loopback emulator (checked with the key in validateGatewayConfig).
      baseUrl: z
        .url({ protocol: /^https?$/, error: 'must be an https URL' })
        .default(STRIPE_DEFAULT_BASE_URL),
      captureWindowDays: CAPTURE_WINDOW_DAYS,
    })
    .strict(),
} as const;

export type SimulatorCredentials = z.output<typeof gatewayCredentialsSchemas.simulator>;
export type StripeCredentials = z.output<typeof gatewayCredentialsSchemas.stripe>;
export type SimulatorSettingsConfig = z.output<typeof gatewaySettingsSchemas.simulator>;
export type StripeSettingsConfig = z.output<typeof gatewaySettingsSchemas.stripe>;

export interface ValidGatewayConfig {
  type: GatewayType;
  credentials: Record<string, string>;
  settings: Record<string, unknown>;
}

/** Whether `input` holds a value (null included) at `path`. */
function present(input: unknown, path: PropertyKey[]): boolean {
  let at: unknown = input;
  for (const key of path) {
    if (at === null || typeof at !== 'object' || !Object.prototype.hasOwnProperty.call(at, key)) return false;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at !== undefined;
}

function configError(section: 'credentials' | 'settings', error: z.ZodError, input: unknown): GatewayConfigError {
  const issue = error.issues[0];
  if (issue.code === 'unrecognized_keys') {
    const param = `${section}.${issue.keys[0]}`;
    return new GatewayConfigError(param, `Unknown parameter: '${param}'`, 'unknown_parameter');
  }
  const param = [section, ...issue.path.map(String)].join('.');
  // zod does not say whether the value was absent or of the wrong type: look.
  if (issue.code === 'invalid_type' && !present(input, issue.path)) {
    return new GatewayConfigError(param, `Missing required parameter: '${param}'`, 'missing_parameter');
  }
  return new GatewayConfigError(param, `Invalid '${param}': ${issue.message}`);
}

/** Validates a gateway's type, credentials and settings; returns them normalised (defaults applied). */
export function validateGatewayConfig(type: string, credentials: unknown, settings: unknown): ValidGatewayConfig {
  if (!isGatewayType(type)) {
    throw new GatewayConfigError('type', `Invalid 'type': must be one of ${GATEWAY_TYPES.join(', ')}`);
  }
  const creds = gatewayCredentialsSchemas[type].safeParse(credentials ?? {});
  if (!creds.success) throw configError('credentials', creds.error, credentials ?? {});
  const sets = gatewaySettingsSchemas[type].safeParse(settings ?? {});
  if (!sets.success) throw configError('settings', sets.error, settings ?? {});
  if (type === 'stripe') {
    const { baseUrl } = sets.data as StripeSettingsConfig;
    const problem = stripeBaseUrlProblem(baseUrl, (creds.data as StripeCredentials).secretKey);
    if (problem) throw new GatewayConfigError('settings.baseUrl', `Invalid 'settings.baseUrl': ${problem}`);
  }
  return { type, credentials: creds.data as Record<string, string>, settings: sets.data as Record<string, unknown> };
}

export interface CreateGatewayOptions {
  credentials: Record<string, string>;
  settings?: Record<string, unknown>;
  /** Our `gw_` id; the simulator keys its idempotency store by it. */
  gatewayId: string;
  httpsAgentOptions?: { ca?: string | Buffer };
  timeoutMs?: number;
  /** GATEWAY_ALLOW_PRIVATE_BASE_URL (see StripeGatewayOptions). */
  allowPrivateAddresses?: boolean;
  /** Replaces DNS under the address policy (tests). */
  lookup?: LookupFunction;
  /** "Now" for expiry checks in the simulator (test clocks). */
  clock?: { now(): Date };
  /** The service's public address, where the simulator's challenge page is served. */
  publicBaseUrl?: () => string;
}

type Factory = (opts: CreateGatewayOptions) => Gateway;

/** The static registry: one factory per type; each validates its own config first. */
const FACTORIES: Record<GatewayType, Factory> = {
  simulator: (opts) =>
    new SimulatorGateway({
      gatewayId: opts.gatewayId,
      settings: gatewaySettingsSchemas.simulator.parse(opts.settings ?? {}),
      timeoutMs: opts.timeoutMs,
      clock: opts.clock,
      publicBaseUrl: opts.publicBaseUrl,
    }),
  stripe: (opts) =>
    new StripeGateway({
      gatewayId: opts.gatewayId,
      credentials: gatewayCredentialsSchemas.stripe.parse(opts.credentials),
      settings: gatewaySettingsSchemas.stripe.parse(opts.settings ?? {}),
      httpsAgentOptions: opts.httpsAgentOptions,
      timeoutMs: opts.timeoutMs,
      allowPrivateAddresses: opts.allowPrivateAddresses,
      lookup: opts.lookup,
    }),
};

/** Builds a connector; throws GatewayConfigError for an unknown type or invalid config. */
export function createGateway(type: string, opts: CreateGatewayOptions): Gateway {
  const valid = validateGatewayConfig(type, opts.credentials, opts.settings);
  return FACTORIES[valid.type]({ ...opts, credentials: valid.credentials, settings: valid.settings });
}

/**
 * A gateway's answers are stored (outcomes, gateway transactions, events): whatever a remote
 * gateway sends back, its text is made storable here (no NUL, no unpaired surrogate), so
 * recording an outcome never fails on it after money has moved.
 */
export function withStorableResults(gateway: Gateway): Gateway {
  return {
    type: gateway.type,
    chargeReplayWindowMs: gateway.chargeReplayWindowMs,
    charge: async (request) => storableDeep(await gateway.charge(request)),
    capture: async (request) => storableDeep(await gateway.capture(request)),
    cancel: async (request) => storableDeep(await gateway.cancel(request)),
    refund: async (request) => storableDeep(await gateway.refund(request)),
    status: async (request) => storableDeep(await gateway.status(request)),
    saveCard: async (request) => storableDeep(await gateway.saveCard(request)),
  };
}
