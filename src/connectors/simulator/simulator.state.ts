import { hashSeed, mulberry32, type Rng } from '../../modules/routing/rng';
import type { GatewayOutcome } from '../connector';

export type SimulatorOperation = 'charge' | 'refund' | 'save_card' | 'capture' | 'cancel';

/**
 * What a charge that was not simply captured at once goes through: authorised only (manual
 * capture), then captured or voided; or waiting for the customer's 3-D Secure challenge first.
 * Only such charges carry one, so the others stay as small as before.
 */
export class ChargeLife {
  /** How much of the authorisation was captured (0 until then); refunds are held to it. */
  captured = 0;
  voided = false;
  constructor(
    /** Whether the charge was asked to capture at once (`capture` not false). */
    readonly captureAtOnce: boolean,
    /** While the customer has not answered the challenge: its id, where it sends them back, how it ends when completed. */
    public challenge: { id: string; returnUrl: string | null; completed: { outcome: GatewayOutcome; declineCode: string | null; message: string | null } } | null,
  ) {}
}

/**
 * What the simulator keeps of one operation (one gateway and idempotency key): the fields its
 * answer is rebuilt from, exactly, and nothing else. Not the result object, not the redacted
 * request summary (an answer carries the asking call's own), not a Promise once it settled:
 * about 350 bytes with its keys and map entries, where the stored result took about 1.45 KB.
 */
export class KnownOperation {
  /** While the simulated latency runs: concurrent repeats and look-ups wait for it. */
  pending: Promise<void> | null = null;
  /** Of a charge: how much refunds have taken from it. */
  refunded = 0;
  /** Of a charge authorised only, or waiting for 3-D Secure (see ChargeLife); null for one captured at once. */
  life: ChargeLife | null = null;

  constructor(
    /** The operations map's key (operationKey), to forget it by. */
    readonly key: string,
    readonly gatewayId: string,
    readonly operation: SimulatorOperation,
    /** How many times an operation under this key actually ran (retryable failures included). */
    readonly runs: number,
    /** Changes only for a charge waiting for 3-D Secure, when the customer answers the challenge. */
    public outcome: GatewayOutcome,
    public declineCode: string | null,
    public message: string | null,
    /** The charge's or refund's id, or a saved card's token; null when nothing was created. */
    readonly reference: string | null,
    readonly amount: number,
    /** As the request spelt it: answers echo it. */
    readonly currency: string | null,
    readonly brand: string | null,
    readonly last4: string | null,
    /** Of a refund: the charge it was made against. */
    readonly chargeReference: string | null,
  ) {}

  /** Whether its answer is final, so a repeat replays it: a retryable failure did nothing and runs again. */
  get final(): boolean {
    return this.outcome !== 'retryable_error';
  }
}

interface SimulatorState {
  /** By operationKey: what each operation answered (and still answers to a repeat or a look-up). */
  operations: Map<string, KnownOperation>;
  /** By charge reference: the same charge operations, for refunds. */
  charges: Map<string, KnownOperation>;
  /** By challenge id: the charges waiting for the customer's 3-D Secure answer. */
  challenges: Map<string, KnownOperation>;
  /** Settled operations, oldest first from `head`; what is forgotten first. */
  queue: Array<KnownOperation | undefined>;
  head: number;
  /** How many settled operations were forgotten since the process started (or the last reset). */
  forgotten: number;
  rngs: Map<string, { seed: number; next: Rng }>;
}

/*
 * One state per process, hung on globalThis: every app instance (and every Gateway object built
 * for the same gatewayId) in this process shares it, as a real gateway's backend would be shared.
 */
const STATE_KEY = Symbol.for('payorch.gateways.simulator.state');

function freshState(): SimulatorState {
  return { operations: new Map(), charges: new Map(), challenges: new Map(), queue: [], head: 0, forgotten: 0, rngs: new Map() };
}

export function simulatorState(): SimulatorState {
  const holder = globalThis as unknown as Record<symbol, SimulatorState | undefined>;
  holder[STATE_KEY] ??= freshState();
  return holder[STATE_KEY];
}

export const operationKey = (gatewayId: string, idempotencyKey: string): string => `${gatewayId}\u0000${idempotencyKey}`;

/**
 * How much the simulator remembers: the latest `limit` settled operations, whatever their age,
 * plus those still in flight (their callers wait on them anyway). It used to keep two minutes
 * of traffic whatever the rate, about 1.5 KB a payment: 367 to 412 MB of RSS under 1,900 to
 * 2,300 payments a second. Now about 350 bytes an operation, so about 20 MB at most.
 *
 * A remembered operation is answered exactly as the first time: a repeat under its key replays
 * it, a look-up finds it, a refund of its charge is held to what is left of it. A forgotten one
 * (test mode only, simulated money) is unknown, as one made before this process started:
 * - Once anything was forgotten, "not found" is no longer `definitive` (an unknown key may be a
 *   forgotten one), so recovery takes it as final only once the payment or refund has been
 *   pending NOT_FOUND_FINAL_AFTER_MS (pending-recovery.ts), and then records it failed: a
 *   simulated charge or refund that did happen ends `failed`.
 * - A repeat under its key runs again: a second simulated charge, with its own reference.
 *   (Recovery repeats no simulator charge: the simulator has no `chargeReplayWindowMs`.)
 * - A refund of its charge is accepted on the reference's shape alone, with no amount check.
 * Recovery asks about an operation about 10 s after it was left unanswered (10 s leases,
 * recovery every 3 s); 50,000 operations are over 20 s of this machine's highest rate.
 */
export const SIMULATOR_MEMORY = { limit: 50_000 };

/**
 * Remembers a settled operation as the newest, then forgets the oldest past the limit. An
 * operation still in flight is remembered (in `operations`) but queued only once it settles.
 */
export function rememberOperation(known: KnownOperation): void {
  const state = simulatorState();
  state.operations.set(known.key, known);
  if (known.reference !== null && known.operation === 'charge') state.charges.set(known.reference, known);
  if (known.life?.challenge) state.challenges.set(known.life.challenge.id, known);
  if (known.pending === null) queueSettled(known);
}

/** Queues an operation that has settled for forgetting, oldest first. */
export function queueSettled(known: KnownOperation): void {
  const state = simulatorState();
  state.queue.push(known);
  while (state.queue.length - state.head > SIMULATOR_MEMORY.limit) {
    const oldest = state.queue[state.head] as KnownOperation;
    state.queue[state.head++] = undefined;
    // Replaced since (a retryable failure run again): the newer one is queued on its own.
    if (state.operations.get(oldest.key) !== oldest) continue;
    state.operations.delete(oldest.key);
    if (oldest.reference !== null && state.charges.get(oldest.reference) === oldest) state.charges.delete(oldest.reference);
    if (oldest.life?.challenge) state.challenges.delete(oldest.life.challenge.id);
    state.forgotten++;
  }
  // The queue's forgotten front is dropped now and then, so it stays about `limit` long.
  if (state.head > 1024 && state.head * 2 > state.queue.length) {
    state.queue = state.queue.slice(state.head);
    state.head = 0;
  }
}

/** Whether a key the simulator does not know was surely never used: nothing was forgotten yet. */
export function forgetsNothing(): boolean {
  return simulatorState().forgotten === 0;
}

/** Forgets every stored operation, charge and PRNG stream (tests only). */
export function resetSimulatorState(): void {
  const state = simulatorState();
  state.operations.clear();
  state.charges.clear();
  state.challenges.clear();
  state.queue = [];
  state.head = 0;
  state.forgotten = 0;
  state.rngs.clear();
}

/** How many times a charge with this key actually ran (idempotent replays and outages excluded). */
export function simulatorChargeCount(gatewayId: string, idempotencyKey: string): number {
  const known = simulatorState().operations.get(operationKey(gatewayId, idempotencyKey));
  return known?.operation === 'charge' ? known.runs : 0;
}

/** Charges this gateway actually ran under the keys it remembers (tests). */
export function simulatorChargesAt(gatewayId: string): number {
  let n = 0;
  for (const known of simulatorState().operations.values()) if (known.gatewayId === gatewayId && known.operation === 'charge') n += known.runs;
  return n;
}

/**
 * A copy of `text` as one flat string. Strings built by concatenation (our ids, the keys above)
 * are trees of pieces in V8, about 30 bytes a piece and a piece per character past the
 * thirteenth, kept whole for as long as the string is: a kept 30-character id weighed over
 * 400 bytes. The JSON round trip returns the same characters, lone surrogates included.
 */
export function flat(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}

/*
 * Short strings every answer repeats (currencies, card brands and last four digits) are kept
 * once, not once per operation; bounded, since a request may spell anything.
 */
const INTERNED = new Map<string, string>();
const INTERNED_LIMIT = 20_000;

export function intern(text: string): string;
export function intern(text: string | null): string | null;
export function intern(text: string | null): string | null {
  if (text === null || text.length > 16) return text;
  const kept = INTERNED.get(text);
  if (kept !== undefined) return kept;
  if (INTERNED.size < INTERNED_LIMIT) INTERNED.set(text, text);
  return text;
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
