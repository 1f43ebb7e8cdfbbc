import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Metrics, RateBudgetName } from '../observability/metrics';
import type { RedisBreaker } from './redis-breaker';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/**
 * Fixed one-minute windows per subject (an account in one mode, or a client IP). Memory by default; Redis
 * when configured, so every instance counts against the same budget. While Redis does not answer
 * (the breaker is open) each instance counts in its own memory instead, and goes back to Redis
 * once it answers: a request is never refused or slowed because Redis is down.
 */
export class RateLimiter {
  private readonly shared = new Map<number, RateLimiterAbstract>();
  private readonly local = new Map<number, RateLimiterAbstract>();

  constructor(private readonly redis?: { client: Redis; breaker: RedisBreaker }, private readonly metrics?: Metrics) {}

  private limiterFor(points: number, inRedis: boolean): RateLimiterAbstract {
    const limiters = inRedis ? this.shared : this.local;
    let limiter = limiters.get(points);
    if (!limiter) {
      const opts = { points, duration: 60, keyPrefix: `payorch:rl:${points}` };
      limiter = inRedis ? new RateLimiterRedis({ ...opts, storeClient: this.redis!.client }) : new RateLimiterMemory(opts);
      limiters.set(points, limiter);
    }
    return limiter;
  }

  /** Runs `use` on Redis's limiter while the breaker lets it, else (or when Redis fails meanwhile) on this instance's. */
  private async withLimiter<T>(points: number, use: (limiter: RateLimiterAbstract) => Promise<T>): Promise<T> {
    if (this.redis?.breaker.available) {
      try {
        return await use(this.limiterFor(points, true));
      } catch (err) {
        this.redis.breaker.failed(err);
      }
    }
    return use(this.limiterFor(points, false));
  }

  /**
   * Counts `points` requests against the subject's budget of `limit` a minute. Several points
   * (a GraphQL document's mutations) are taken together or not at all: refused, they are given
   * back, so what is left stays usable by smaller requests. A refusal is counted (metrics) under
   * `budget`, by default the one the subject's name says.
   */
  consume(subject: string, limit: number, points = 1, budget?: RateBudgetName): Promise<RateDecision> {
    return this.withLimiter(limit, async (limiter) => {
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
    });
  }

  /**
   * Gives back points consumed for something that turned out not to count (a connection attempt
   * counted as failed before its key was checked, then accepted). Counting first and giving back
   * later keeps attempts made at once from all passing one check.
   */
  async refund(subject: string, limit: number, points = 1): Promise<void> {
    await this.withLimiter(limit, (limiter) => limiter.reward(subject, points));
  }
}

/** The budget a subject belongs to, by how its name starts (`account:…`, `ip:…`, `ws-connect:ip:…`), for the refusal count. */
function budgetOf(subject: string): RateBudgetName {
  if (subject.startsWith('ws-connect:')) return 'ws_failed_connects';
  return subject.startsWith('ip:') ? 'ip' : 'account';
}
