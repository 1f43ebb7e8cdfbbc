import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Metrics, RateBudgetName } from '../observability/metrics';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/**
 * Fixed one-minute windows per subject (an account in one mode, or a client IP). Memory by default; Redis
 * when configured, so every instance counts against the same budget.
 */
export class RateLimiter {
  private readonly limiters = new Map<number, RateLimiterAbstract>();

  constructor(private readonly redis?: Redis, private readonly metrics?: Metrics) {}

  private limiterFor(points: number): RateLimiterAbstract {
    let limiter = this.limiters.get(points);
    if (!limiter) {
      const opts = { points, duration: 60, keyPrefix: `payorch:rl:${points}` };
      limiter = this.redis ? new RateLimiterRedis({ ...opts, storeClient: this.redis }) : new RateLimiterMemory(opts);
      this.limiters.set(points, limiter);
    }
    return limiter;
  }

  /**
   * Counts `points` requests against the subject's budget of `limit` a minute. Several points
   * (a GraphQL document's mutations) are taken together or not at all: refused, they are given
   * back, so what is left stays usable by smaller requests. A refusal is counted (metrics) under
   * `budget`, by default the one the subject's name says.
   */
  async consume(subject: string, limit: number, points = 1, budget?: RateBudgetName): Promise<RateDecision> {
    const limiter = this.limiterFor(limit);
    try {
      const res = await limiter.consume(subject, points);
      return { allowed: true, limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        let remaining = 0;
        if (points > 1) remaining = Math.max(0, limit - ((await limiter.reward(subject, points)).consumedPoints));
        this.metrics?.countRateLimitRefusal(budget ?? budgetOf(subject));
        return { allowed: false, limit, remaining, resetSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
      }
      throw err;
    }
  }

  /**
   * Gives back points consumed for something that turned out not to count (a connection attempt
   * counted as failed before its key was checked, then accepted). Counting first and giving back
   * later keeps attempts made at once from all passing one check.
   */
  async refund(subject: string, limit: number, points = 1): Promise<void> {
    await this.limiterFor(limit).reward(subject, points);
  }
}

/** The budget a subject belongs to, by how its name starts (`account:…`, `ip:…`, `ws-connect:ip:…`), for the refusal count. */
function budgetOf(subject: string): RateBudgetName {
  if (subject.startsWith('ws-connect:')) return 'ws_failed_connects';
  return subject.startsWith('ip:') ? 'ip' : 'account';
}
