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
