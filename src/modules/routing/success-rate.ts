/** Recent success rate per gateway over a sliding window of outcomes. */
export class SuccessRateTracker {
  private readonly windows = new Map<string, { outcomes: boolean[]; next: number; successes: number }>();
  readonly windowSize: number;
  private readonly prior: number;
  private readonly priorWeight: number;

  /**
   * `prior` is the rate assumed before any data, blended in with the weight of `priorWeight`
   * outcomes: a new gateway starts neutral instead of at 0 % (never tried) or 100 %.
   */
  constructor(opts: { windowSize?: number; prior?: number; priorWeight?: number } = {}) {
    this.windowSize = opts.windowSize ?? 100;
    this.prior = opts.prior ?? 0.5;
    this.priorWeight = opts.priorWeight ?? 2;
    if (!Number.isInteger(this.windowSize) || this.windowSize < 1) throw new RangeError('windowSize must be a positive integer');
  }

  record(gatewayId: string, success: boolean): void {
    let window = this.windows.get(gatewayId);
    if (!window) {
      window = { outcomes: [], next: 0, successes: 0 };
      this.windows.set(gatewayId, window);
    }
    if (window.outcomes.length < this.windowSize) {
      window.outcomes.push(success);
    } else {
      // Ring buffer: overwrite the oldest outcome.
      if (window.outcomes[window.next]) window.successes--;
      window.outcomes[window.next] = success;
      window.next = (window.next + 1) % this.windowSize;
    }
    if (success) window.successes++;
  }

  /** Smoothed rate in [0, 1]; exactly `prior` for a gateway with no data. */
  rate(gatewayId: string): number {
    const window = this.windows.get(gatewayId);
    const total = window?.outcomes.length ?? 0;
    const successes = window?.successes ?? 0;
    return (successes + this.prior * this.priorWeight) / (total + this.priorWeight);
  }

  stats(gatewayId: string): { successes: number; total: number; rate: number } {
    const window = this.windows.get(gatewayId);
    return { successes: window?.successes ?? 0, total: window?.outcomes.length ?? 0, rate: this.rate(gatewayId) };
  }

  reset(gatewayId?: string): void {
    if (gatewayId === undefined) this.windows.clear();
    else this.windows.delete(gatewayId);
  }
}
