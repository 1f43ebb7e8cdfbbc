import { hashSeed, mulberry32, type Rng } from '../../modules/routing/rng';
import type { GatewayResult } from '../connector';

export type SimulatorOperation = 'charge' | 'refund' | 'save_card';

interface StoredOperation {
  operation: SimulatorOperation;
  /** When it was made (the simulator's clock, ms): see SIMULATOR_MEMORY. */
  at: number;
  /** Settles when the simulated latency has passed; concurrent repeats wait on the same promise. */
  result: Promise<GatewayResult>;
}

interface KnownCharge {
  /** When it was made (the simulator's clock, ms): see SIMULATOR_MEMORY. */
  at: number;
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
 * What the simulator keeps. It used to keep every operation and charge for the life of the
 * process (about 1 KB per payment), so a long-running test-mode instance grew without bound.
 * Past `limit` entries the oldest are forgotten, but never one younger than `minAgeMs`. The state
 * lives in this process, so only this process's recovery ever asks about an operation, and it
 * asks within seconds (leases run 10 s, recovery every 3 s): two minutes leaves a wide margin
 * before a forgotten operation would answer "not found", which recovery may take as final.
 * Memory is then bounded by the larger of `limit` entries (about 50 MB) and two minutes of
 * traffic. A charge forgotten before its refund is still refunded (its reference is trusted, as
 * after a restart).
 */
export const SIMULATOR_MEMORY = { limit: 50_000, minAgeMs: 2 * 60_000 };

/** Sets `key` (as the newest entry), then forgets the oldest entries past the limit that are old enough. */
function remember<V extends { at: number }>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  for (const [oldest, entry] of map) {
    if (map.size <= SIMULATOR_MEMORY.limit || value.at - entry.at < SIMULATOR_MEMORY.minAgeMs) break;
    map.delete(oldest);
    // A charge count is kept as long as its operation (tests read it).
    simulatorState().chargeCounts.delete(oldest);
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
  counts.set(key, (counts.get(key) ?? 0) + 1);
  // Counts of keys whose every attempt failed retryably have no operation to go with: capped.
  for (const oldest of counts.keys()) {
    if (counts.size <= 2 * SIMULATOR_MEMORY.limit) break;
    counts.delete(oldest);
  }
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
