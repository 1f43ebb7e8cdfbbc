import { computeInvoiceTaxes, type TaxRateUse } from '../../../src/modules/invoices/invoice-tax';
import type { TaxExempt } from '../../../src/modules/customers/customer.inputs';
import { seeded } from '../../helpers/seeded';

/*
 * Conservation of an invoice's taxes on random invoices (seeded, reproducible), against a model
 * of API.md §12 written apart from the service: the percentage as the decimal text a merchant
 * types, each rate's tax computed in Number arithmetic on that rate's lines' sum and rounded half
 * away from zero once (amounts kept small enough to be exact in a double). What the customer is
 * charged (total) must be the lines plus the exclusive taxes, each inclusive rate's tax must sit
 * inside its lines (taxable + tax = the lines' sum), and exempt or reverse customers pay no tax.
 */
function modelRound(numerator: number, denominator: number): number {
  const magnitude = Math.abs(numerator);
  const whole = Math.floor(magnitude / denominator);
  const rest = magnitude - whole * denominator;
  const rounded = rest * 2 >= denominator ? whole + 1 : whole;
  return numerator < 0 ? -rounded : rounded;
}

function model(lines: Array<{ amount: number; taxRateIds: string[] }>, rates: Map<string, { text: string; inclusive: boolean }>, exempt: TaxExempt) {
  const sums = new Map<string, number>();
  for (const line of lines) for (const id of line.taxRateIds) sums.set(id, (sums.get(id) ?? 0) + line.amount);
  const subtotal = lines.reduce((s, l) => s + l.amount, 0);
  let exclusive = 0;
  const perRate = new Map<string, { taxable: number; tax: number }>();
  for (const [id, sum] of sums) {
    const { text, inclusive } = rates.get(id)!;
    // "19.5" → 195 / 10 percent, exactly: p% = digits / 10^decimals / 100.
    const [whole, fraction = ''] = text.split('.');
    const digits = Number(whole + fraction);
    const scale = 100 * 10 ** fraction.length;
    let tax = 0;
    if (exempt === 'none') tax = inclusive ? modelRound(sum * digits, scale + digits) : modelRound(sum * digits, scale);
    if (!inclusive) exclusive += tax;
    perRate.set(id, { taxable: inclusive ? sum - tax : sum, tax });
  }
  return { subtotal, tax: exclusive, total: subtotal + exclusive, perRate };
}

describe('invoice taxes against an independent model (seeded random invoices)', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('seed %i: 200 invoices add up to the model to the minor unit', (seed) => {
    const random = seeded(seed);
    const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
    for (let n = 0; n < 200; n++) {
      // Rates with 0 to 4 decimals, exclusive or inclusive.
      const texts = new Map<string, { text: string; inclusive: boolean }>();
      const use = new Map<string, TaxRateUse>();
      for (let r = 0; r < int(1, 4); r++) {
        const decimals = int(0, 4);
        const digits = int(0, 100 * 10 ** decimals);
        const text = decimals === 0 ? String(digits) : `${Math.floor(digits / 10 ** decimals)}.${String(digits % 10 ** decimals).padStart(decimals, '0')}`;
        const inclusive = random() < 0.3;
        texts.set(`r${r}`, { text, inclusive });
        use.set(`r${r}`, { displayName: `Rate ${r}`, percentageE4: Math.round(Number(text) * 10_000), inclusive });
      }
      const exclusiveIds = [...texts].filter(([, t]) => !t.inclusive).map(([id]) => id);
      const inclusiveIds = [...texts].filter(([, t]) => t.inclusive).map(([id]) => id);
      // Lines (proration credits negative among them) with any exclusive rates, or one inclusive rate alone, or none.
      const lines = Array.from({ length: int(1, 8) }, () => {
        const amount = int(-50_000, 200_000);
        const pick = random();
        const taxRateIds = pick < 0.2 || (inclusiveIds.length === 0 && exclusiveIds.length === 0) ? []
          : pick < 0.5 && inclusiveIds.length > 0 ? [inclusiveIds[int(0, inclusiveIds.length - 1)]]
            : exclusiveIds.filter(() => random() < 0.6);
        return { amount, taxRateIds };
      });
      const exempt = (['none', 'none', 'none', 'exempt', 'reverse'] as const)[int(0, 4)];
      const got = computeInvoiceTaxes(lines, use, exempt);
      const want = model(lines, texts, exempt);
      const label = { seed, n, lines, rates: [...texts], exempt };
      expect({ ...label, subtotal: Number(got.subtotal), tax: Number(got.tax), total: Number(got.total) })
        .toEqual({ ...label, subtotal: want.subtotal, tax: want.tax, total: want.total });
      expect({ ...label, breakdown: got.breakdown.map((b) => [b.taxRateId, b.taxableAmount, b.amount]) })
        .toEqual({ ...label, breakdown: [...want.perRate].map(([id, r]) => [id, r.taxable, r.tax]) });
      // Conservation: the total is the lines and the exclusive taxes, nothing else; exempt customers pay none.
      expect(Number(got.total)).toBe(lines.reduce((s, l) => s + l.amount, 0) + got.breakdown.filter((b) => !b.inclusive).reduce((s, b) => s + b.amount, 0));
      if (exempt !== 'none') expect(got.breakdown.every((b) => b.amount === 0)).toBe(true);
    }
  });
});
