import { hashSeed, mulberry32, type Rng } from '../../routing/rng';
import type { GatewayResult } from '../gateway';

export type SimulatorOperation = 'charge' | 'refund' | 'save_card';

interface StoredOperation {
  operation: SimulatorOperation;
  /** Settles when the simulated latency has passed; concurrent repeats wait on the same promise. */
  result: Promise<GatewayResult>;
}

interface KnownCharge {
  gatewayId: string;
  amount: number;
  currency: string;
  succeeded: boolean;
  refunded: number;
}

interface SimulatorState {
  operations: Map<string, StoredOperation>;
  chargeCounts: Map<string, number>;
  charges: Map<string, KnownCharge>;
  rngs: Map<string, { seed: number; next: Rng }>;
}

/*
 * One state per process, hung on globalThis: every app instance (and every Gateway object built
 * for the same gatewayId) in this process shares it, as a real gateway's backend would be shared.
 */
const STATE_KEY = Symbol.for('payorch.gateways.simulator.state');

function freshState(): SimulatorState {
  return { operations: new Map(), chargeCounts: new Map(), charges: new Map(), rngs: new Map() };
}

export function simulatorState(): SimulatorState {
  const holder = globalThis as unknown as Record<symbol, SimulatorState | undefined>;
  holder[STATE_KEY] ??= freshState();
  return holder[STATE_KEY];
}

export const operationKey = (gatewayId: string, idempotencyKey: string): string => `${gatewayId}\u0000${idempotencyKey}`;

/**
 * How many operations, charges and charge counts the simulator keeps. Past it the oldest are
 * forgotten, so a long-running test-mode instance does not grow without bound (about 1 KB per
 * payment was kept for the life of the process). 50,000 operations is hours of heavy test
 * traffic; recovery asks about an operation within seconds, and a charge forgotten before its
 * refund is still refunded (its reference is trusted, as after a restart).
 */
export const SIMULATOR_MEMORY = { limit: 50_000 };

/** Sets (or refreshes) `key`, forgetting the oldest entries past SIMULATOR_MEMORY.limit. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= SIMULATOR_MEMORY.limit) break;
    map.delete(oldest);
  }
}

export function rememberOperation(key: string, operation: StoredOperation): void {
  remember(simulatorState().operations, key, operation);
}

export function rememberCharge(reference: string, charge: KnownCharge): void {
  remember(simulatorState().charges, reference, charge);
}

/** Forgets every stored operation, charge and PRNG stream (tests only). */
export function resetSimulatorState(): void {
  const state = simulatorState();
  state.operations.clear();
  state.chargeCounts.clear();
  state.charges.clear();
  state.rngs.clear();
}

/** How many times a charge with this key actually ran (idempotent replays and outages excluded). */
export function simulatorChargeCount(gatewayId: string, idempotencyKey: string): number {
  return simulatorState().chargeCounts.get(operationKey(gatewayId, idempotencyKey)) ?? 0;
}

export function countCharge(gatewayId: string, idempotencyKey: string): void {
  const counts = simulatorState().chargeCounts;
  const key = operationKey(gatewayId, idempotencyKey);
  remember(counts, key, (counts.get(key) ?? 0) + 1);
}

/**
 * The failure-rate PRNG continues across Gateway objects for the same gateway, so building a
 * connector per request still yields the configured share of failures.
 */
export function failureDraw(gatewayId: string, seed: number | undefined): number {
  const rngs = simulatorState().rngs;
  const effectiveSeed = seed ?? hashSeed(gatewayId);
  let entry = rngs.get(gatewayId);
  if (!entry || entry.seed !== effectiveSeed) {
    entry = { seed: effectiveSeed, next: mulberry32(effectiveSeed) };
    rngs.set(gatewayId, entry);
  }
  return entry.next();
}

export type { KnownCharge, StoredOperation };
