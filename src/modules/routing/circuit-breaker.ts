export type CircuitState = 'closed' | 'open' | 'half_open';

interface Circuit {
  consecutiveFailures: number;
  openedAt: number | null;
  trialStartedAt: number | null;
}

export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit (default 5). */
  failureThreshold?: number;
  /** How long an open circuit refuses traffic before one trial is allowed (default 30 s). */
  cooldownMs?: number;
  clock: { now(): Date };
}

/**
 * Per-gateway circuit breaker. Feed it only gateway faults (retryable errors, timeouts) as
 * failures; a card decline is the gateway working and counts as a success.
 *
 * closed --threshold consecutive failures--> open --cooldown--> half_open
 * half_open --success--> closed; half_open --failure--> open (a new cooldown)
 */
export class CircuitBreaker {
  private readonly circuits = new Map<string, Circuit>();
  readonly failureThreshold: number;
  readonly cooldownMs: number;
  private readonly clock: { now(): Date };

  constructor(opts: CircuitBreakerOptions) {
    this.failureThreshold = opts.failureThreshold ?? 5;
    this.cooldownMs = opts.cooldownMs ?? 30_000;
    this.clock = opts.clock;
    if (!Number.isInteger(this.failureThreshold) || this.failureThreshold < 1) throw new RangeError('failureThreshold must be a positive integer');
    if (!(this.cooldownMs >= 0)) throw new RangeError('cooldownMs must not be negative');
  }

  state(gatewayId: string): CircuitState {
    const circuit = this.circuits.get(gatewayId);
    if (!circuit || circuit.openedAt === null) return 'closed';
    return this.now() < circuit.openedAt + this.cooldownMs ? 'open' : 'half_open';
  }

  /**
   * True while the gateway should be skipped: open, or half-open with its one trial already
   * under way. Reading it changes nothing (routing simulations call it too).
   */
  isOpen(gatewayId: string): boolean {
    const state = this.state(gatewayId);
    if (state === 'closed') return false;
    if (state === 'open') return true;
    return this.trialInFlight(this.circuits.get(gatewayId)!);
  }

  /**
   * Call right before sending to the gateway: false means skip it. In half-open it claims the
   * single trial; a claim with no recorded result expires after another cooldown.
   */
  tryAcquire(gatewayId: string): boolean {
    const state = this.state(gatewayId);
    if (state === 'closed') return true;
    if (state === 'open') return false;
    const circuit = this.circuits.get(gatewayId)!;
    if (this.trialInFlight(circuit)) return false;
    circuit.trialStartedAt = this.now();
    return true;
  }

  recordSuccess(gatewayId: string): void {
    const circuit = this.circuits.get(gatewayId);
    if (!circuit) return;
    // A success that started before the circuit opened proves little: wait for the trial.
    if (this.state(gatewayId) === 'open') return;
    this.circuits.delete(gatewayId);
  }

  recordFailure(gatewayId: string): void {
    const circuit = this.circuit(gatewayId);
    const state = this.state(gatewayId);
    if (state === 'open') return;
    if (state === 'half_open') {
      circuit.openedAt = this.now();
      circuit.trialStartedAt = null;
      return;
    }
    circuit.consecutiveFailures++;
    if (circuit.consecutiveFailures >= this.failureThreshold) {
      circuit.openedAt = this.now();
      circuit.trialStartedAt = null;
    }
  }

  /** For health views and tests. */
  describe(gatewayId: string): { state: CircuitState; consecutiveFailures: number; openUntil: Date | null } {
    const circuit = this.circuits.get(gatewayId);
    const state = this.state(gatewayId);
    return {
      state,
      consecutiveFailures: circuit?.consecutiveFailures ?? 0,
      openUntil: state === 'open' && circuit?.openedAt != null ? new Date(circuit.openedAt + this.cooldownMs) : null,
    };
  }

  /** The gateways with a circuit on record (a failure since their last success); every other one is closed. */
  known(): IterableIterator<string> {
    return this.circuits.keys();
  }

  reset(gatewayId?: string): void {
    if (gatewayId === undefined) this.circuits.clear();
    else this.circuits.delete(gatewayId);
  }

  private circuit(gatewayId: string): Circuit {
    let circuit = this.circuits.get(gatewayId);
    if (!circuit) {
      circuit = { consecutiveFailures: 0, openedAt: null, trialStartedAt: null };
      this.circuits.set(gatewayId, circuit);
    }
    return circuit;
  }

  private trialInFlight(circuit: Circuit): boolean {
    return circuit.trialStartedAt !== null && this.now() < circuit.trialStartedAt + this.cooldownMs;
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}
