import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/**
 * Fixed one-minute windows per subject (API key or client IP). Memory by default; Redis when
 * configured, so every instance counts against the same budget.
 */
export class RateLimiter {
  private readonly limiters = new Map<number, RateLimiterAbstract>();

  constructor(private readonly redis?: Redis) {}

  private limiterFor(points: number): RateLimiterAbstract {
    let limiter = this.limiters.get(points);
    if (!limiter) {
      const opts = { points, duration: 60, keyPrefix: `payorch:rl:${points}` };
      limiter = this.redis ? new RateLimiterRedis({ ...opts, storeClient: this.redis }) : new RateLimiterMemory(opts);
      this.limiters.set(points, limiter);
    }
    return limiter;
  }

  async consume(subject: string, limit: number): Promise<RateDecision> {
    try {
      const res = await this.limiterFor(limit).consume(subject, 1);
      return { allowed: true, limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        return { allowed: false, limit, remaining: 0, resetSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
      }
      throw err;
    }
  }
}
