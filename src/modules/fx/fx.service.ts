import { Op, type Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime } from '../../db/database';
import { lockAccount } from '../../db/account-lock';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError } from '../../core/errors';
import { parseInput, withoutReadOnly } from '../../core/validation';
import { invertRate } from './fx-math';
import { putRatesInput } from './fx.inputs';
import { DEMO_BASE, DEMO_CURRENCIES, DEMO_RATES, demoRate } from './demo-rates';
import { FxRateModel } from './fx-rate.model';

/** A rate says how many units of `to` one unit of `from` buys (major units). */
export interface FxRate {
  from: string;
  to: string;
  rate: string;
  updatedAt: string | null;
}

export interface FxRateSet {
  object: 'fx_rates';
  livemode: boolean;
  rates: FxRate[];
  /** Test mode falls back to fixed demo rates for pairs the account has not set. */
  demoRatesAvailable: boolean;
  /** Those demo rates (test mode; empty in live mode), as USD → currency; crossed through USD. */
  demoRates: FxRate[];
}

const DEMO_RATE_LIST: readonly FxRate[] = Object.freeze(
  DEMO_CURRENCIES.filter((c) => c !== DEMO_BASE).map((c) => ({ from: DEMO_BASE, to: c, rate: DEMO_RATES[c], updatedAt: null })),
);

export class FxService {
  constructor(private readonly db: Database) {}

  async list(ctx: RequestContext): Promise<FxRateSet> {
    requirePermission(ctx, 'fx_rates', 'read');
    return this.read(ctx);
  }

  private async read(ctx: RequestContext, t?: Transaction): Promise<FxRateSet> {
    const rows = await FxRateModel.findAll({
      attributes: ['fromCurrency', 'toCurrency', 'rate', 'updatedAt'],
      where: { accountId: ctx.accountId, mode: ctx.mode },
      order: [['fromCurrency', 'ASC'], ['toCurrency', 'ASC']],
      transaction: t,
      raw: true,
    });
    return {
      object: 'fx_rates',
      livemode: ctx.mode === 'live',
      rates: rows.map((r) => ({ from: r.fromCurrency, to: r.toCurrency, rate: r.rate, updatedAt: isoTime(r.updatedAt) })),
      demoRatesAvailable: ctx.mode === 'test',
      demoRates: ctx.mode === 'test' ? DEMO_RATE_LIST.map((r) => ({ ...r })) : [],
    };
  }

  /** Replaces the account's whole rate table for the mode. */
  async replace(ctx: RequestContext, input: unknown): Promise<FxRateSet> {
    requirePermission(ctx, 'fx_rates', 'write');
    // What GET returned may come back as is: its read-only parts are dropped, demo rates included.
    const body = withoutReadOnly(input, ['object', 'livemode', 'demoRatesAvailable', 'demoRates']) as { rates?: unknown };
    if (body && typeof body === 'object' && Array.isArray(body.rates)) body.rates = body.rates.map((r) => withoutReadOnly(r, ['updatedAt']));
    const data = parseInput(putRatesInput, body);
    const now = ctx.clock.now();
    return this.db.transaction(async (t) => {
      // Replaces run one at a time per account: each deletes what the one before it wrote
      // (without the lock, both would insert the same pairs and collide; upserting row by row
      // instead could leave a mix of two tables, or deadlock).
      await lockAccount(this.db, t, ctx.accountId);
      await FxRateModel.destroy({ where: { accountId: ctx.accountId, mode: ctx.mode }, transaction: t });
      if (data.rates.length > 0) {
        await FxRateModel.bulkCreate(
          data.rates.map((r) => ({ accountId: ctx.accountId, mode: ctx.mode, fromCurrency: r.from, toCurrency: r.to, rate: r.rate, updatedAt: now })),
          { transaction: t, returning: false },
        );
      }
      // The table this replace wrote, even when another one follows it at once.
      return this.read(ctx, t);
    });
  }

  /** Units of `to` per unit of `from`: the account's pair, its inverse, then (test mode) demo rates. */
  async rateFor(ctx: RequestContext, from: string, to: string): Promise<string> {
    if (from === to) return '1';
    const rows = await FxRateModel.findAll({
      attributes: ['fromCurrency', 'rate'],
      where: {
        accountId: ctx.accountId,
        mode: ctx.mode,
        [Op.or]: [{ fromCurrency: from, toCurrency: to }, { fromCurrency: to, toCurrency: from }],
      },
      raw: true,
    });
    const direct = rows.find((r) => r.fromCurrency === from);
    if (direct) return direct.rate;
    if (rows[0]) return invertRate(rows[0].rate);
    const demo = ctx.mode === 'test' ? demoRate(from, to) : null;
    if (demo) return demo;
    throw new DomainError('fx_rate_unavailable', `No exchange rate from ${from} to ${to}; set one with PUT /v1/fx-rates`, 'originalCurrency');
  }
}
