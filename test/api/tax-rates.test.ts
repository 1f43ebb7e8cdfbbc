import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { PdfReader, squash } from '../unit/invoices/pdf-text';

let app: TestApp;
let account: TestAccount;
let key: string;
const reader = new PdfReader();
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
});
// Each test in its own account: lists and events of other tests never show.
beforeEach(async () => {
  account = await app.createAccount();
  key = account.testKey;
});
afterAll(async () => {
  reader.close();
  await app.stop();
});

type Json = Record<string, any>;
type Res = { status: number; body: Json };
const post = async (p: string, body?: Json, k = key) => app.request('POST', p, { key: k, body });
const patch = async (p: string, body?: Json, k = key) => app.request('PATCH', p, { key: k, body });
const get = async (p: string, k = key) => app.request('GET', p, { key: k });
const ok = async (res: Promise<Res>, status = 200) => {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
};
/** A refusal: [status, code, param] of the answer. */
const refusal = async (res: Promise<Res>) => {
  const r = await res;
  return [r.status, r.body.error?.code, r.body.error?.param];
};
const taxRate = (body: Json) => ok(post('/v1/tax-rates', body), 201);
const customer = async (body: Json = {}) => ok(post('/v1/customers', { email: `tax-${Math.random().toString(36).slice(2)}@example.com`, ...body }), 201);
const invoice = (body: Json) => ok(post('/v1/invoices', body), 201);
const pdfText = async (invoiceId: string) => squash(reader.text((await app.request('GET', `/v1/invoices/${invoiceId}/pdf`, { key })).buffer));
const breakdown = (inv: Json) => inv.taxBreakdown.map((b: Json) => [b.taxRateId, b.taxableAmount, b.amount]);

describe(`tax rates (${DIALECT})`, () => {
  it('should create, read, list by active, rename and deactivate a tax rate, with its events', async () => {
    const vat = await taxRate({ displayName: 'VAT', percentage: 19.0025, inclusive: false, country: 'de', jurisdiction: 'DE', description: 'Standard rate' });
    expect(vat).toEqual({
      id: expect.stringMatching(/^txr_[0-9A-Za-z]{20,}$/), object: 'tax_rate', livemode: false, displayName: 'VAT', description: 'Standard rate',
      percentage: 19.0025, inclusive: false, country: 'DE', jurisdiction: 'DE', active: true, metadata: {}, createdAt: expect.any(String), updatedAt: vat.createdAt,
    });
    expect(await ok(get(`/v1/tax-rates/${vat.id}`))).toEqual(vat);
    const reduced = await taxRate({ displayName: 'VAT reduced', percentage: 7, inclusive: true });
    const renamed = await ok(patch(`/v1/tax-rates/${reduced.id}`, { displayName: 'MwSt. ermäßigt', active: false, metadata: { code: 'R' } }));
    expect(renamed).toMatchObject({ displayName: 'MwSt. ermäßigt', active: false, percentage: 7, inclusive: true, metadata: { code: 'R' } });
    expect((await ok(get('/v1/tax-rates?active=true'))).map((r: Json) => r.id)).toEqual([vat.id]);
    expect((await ok(get('/v1/tax-rates?active=false'))).map((r: Json) => r.id)).toEqual([reduced.id]);
    expect((await get('/v1/tax-rates')).body.meta.total).toBe(2);
    const events = (await ok(get('/v1/events?pageSize=100'))).filter((e: Json) => e.type.startsWith('tax_rate.')).map((e: Json) => [e.type, e.data.object.id]);
    expect(events).toEqual([['tax_rate.updated', reduced.id], ['tax_rate.created', reduced.id], ['tax_rate.created', vat.id]]);
    // Another mode's (or account's) rate is not there.
    expect(await refusal(get(`/v1/tax-rates/${vat.id}`, account.liveKey))).toEqual([404, 'resource_not_found', 'id']);
  });

  it('should refuse a percentage outside 0–100 or with more than 4 decimals, a missing inclusive, and any change of percentage or inclusive', async () => {
    for (const percentage of [100.5, -1, 19.12345, '19']) {
      expect(await refusal(post('/v1/tax-rates', { displayName: 'VAT', percentage, inclusive: false }))).toEqual([400, 'invalid_parameter', 'percentage']);
    }
    expect(await refusal(post('/v1/tax-rates', { displayName: 'VAT', percentage: 19 }))).toEqual([400, 'missing_parameter', 'inclusive']);
    expect(await refusal(post('/v1/tax-rates', { displayName: ' ', percentage: 19, inclusive: false }))).toEqual([400, 'invalid_parameter', 'displayName']);
    const vat = await taxRate({ displayName: 'VAT', percentage: 19, inclusive: false });
    expect(await refusal(patch(`/v1/tax-rates/${vat.id}`, { percentage: 20 }))).toEqual([400, 'invalid_parameter', 'percentage']);
    expect(await refusal(patch(`/v1/tax-rates/${vat.id}`, { inclusive: true }))).toEqual([400, 'invalid_parameter', 'inclusive']);
    expect(await refusal(patch(`/v1/tax-rates/${vat.id}`, { country: 'FR' }))).toEqual([400, 'unknown_parameter', 'country']);
    expect((await ok(get(`/v1/tax-rates/${vat.id}`))).percentage).toBe(19);
  });

  it('should ask tax_rates:read to read and tax_rates:write to write', async () => {
    const reading = await ok(post('/v1/api-keys', { name: 'read', permissions: ['tax_rates:read'] }), 201);
    const vat = await taxRate({ displayName: 'VAT', percentage: 19, inclusive: false });
    expect((await get(`/v1/tax-rates/${vat.id}`, reading.secret)).status).toBe(200);
    expect(await refusal(post('/v1/tax-rates', { displayName: 'VAT', percentage: 19, inclusive: false }, reading.secret))).toEqual([403, 'permission_denied', undefined]);
    expect(await refusal(patch(`/v1/tax-rates/${vat.id}`, { active: false }, reading.secret))).toEqual([403, 'permission_denied', undefined]);
    const other = await ok(post('/v1/api-keys', { name: 'customers', permissions: ['customers:read'] }), 201);
    expect(await refusal(get('/v1/tax-rates', other.secret))).toEqual([403, 'permission_denied', undefined]);
  });
});

describe(`invoice taxes (${DIALECT})`, () => {
  it('should take 1900 out of 11900 for an inclusive 19 %, adding nothing to the total', async () => {
    const incl = await taxRate({ displayName: 'MwSt.', percentage: 19, inclusive: true });
    const c = await customer();
    const inv = await invoice({ customerId: c.id, currency: 'eur', lineItems: [{ description: 'Seat', unitAmount: 11900, taxRateIds: [incl.id] }] });
    expect(inv).toMatchObject({ subtotal: 11900, tax: 0, total: 11900, amountDue: 11900, customerTaxExempt: 'none', defaultTaxRateIds: [] });
    expect(inv.taxBreakdown).toEqual([{ taxRateId: incl.id, displayName: 'MwSt.', percentage: 19, inclusive: true, taxableAmount: 10000, amount: 1900 }]);
    expect(inv.lineItems[0].taxRateIds).toEqual([incl.id]);
    const text = await pdfText(inv.id);
    // The rate, its tax on the same line, and what it taxes under it.
    expect(text).toContain('MwSt. 19% €19.00');
    expect(text).toContain('included, on €100.00');
  });

  it('should tax 7 % and 19 % lines each on its own, the defaults for lines naming none, and print both on the PDF in German', async () => {
    const vat = await taxRate({ displayName: 'USt.', percentage: 19, inclusive: false });
    const reduced = await taxRate({ displayName: 'USt. ermäßigt', percentage: 7, inclusive: false });
    const c = await customer({ locale: 'de' });
    const inv = await invoice({
      customerId: c.id, currency: 'EUR', defaultTaxRateIds: [vat.id],
      lineItems: [
        { description: 'Beratung', quantity: 2, unitAmount: 5000 },
        { description: 'Fachbuch', unitAmount: 2990, taxRateIds: [reduced.id] },
        { description: 'Reise', unitAmount: 1234 },
      ],
    });
    // 19 %: 10000 + 1234 = 11234 → 2134.46 → 2134; 7 %: 2990 → 209.3 → 209.
    expect(breakdown(inv)).toEqual([[vat.id, 11234, 2134], [reduced.id, 2990, 209]]);
    expect(inv).toMatchObject({ subtotal: 14224, tax: 2343, total: 16567, amountDue: 16567, defaultTaxRateIds: [vat.id] });
    expect(inv.lineItems.map((l: Json) => l.taxRateIds)).toEqual([[], [reduced.id], []]);
    const text = await pdfText(inv.id);
    expect(text).toContain('USt. 19 % 21,34 €');
    expect(text).toContain('auf 112,34 €');
    expect(text).toContain('USt. ermäßigt 7 % 2,09 €');
    expect(text).toContain('auf 29,90 €');
    expect(text).toContain('Gesamtbetrag 165,67 €');

    // A PATCH of the defaults computes again; so does one of the lines.
    const patched = await ok(patch(`/v1/invoices/${inv.id}`, { defaultTaxRateIds: [reduced.id] }));
    // 7 % of 14224 = 995.68 → 996.
    expect(breakdown(patched)).toEqual([[reduced.id, 14224, 996]]);
    expect([patched.tax, patched.total, patched.amountDue]).toEqual([996, 15220, 15220]);
    const relined = await ok(patch(`/v1/invoices/${inv.id}`, { lineItems: [{ description: 'Beratung', unitAmount: 10000, taxRateIds: [vat.id] }] }));
    expect([relined.subtotal, relined.tax, relined.total]).toEqual([10000, 1900, 11900]);
    expect(await ok(get(`/v1/invoices/${inv.id}`))).toEqual(relined);
  });

  it('should round once per rate and invoice (three lines of 105 at 10 %: 32, not 3 × 11)', async () => {
    const ten = await taxRate({ displayName: 'Sales tax', percentage: 10, inclusive: false });
    const c = await customer();
    const inv = await invoice({ customerId: c.id, currency: 'usd', defaultTaxRateIds: [ten.id], lineItems: [1, 2, 3].map((n) => ({ description: `Item ${n}`, unitAmount: 105 })) });
    expect([inv.subtotal, inv.tax, inv.total]).toEqual([315, 32, 347]);
  });

  it('should tax yen (no decimals) and dinar (3 decimals) in their minor units', async () => {
    const ten = await taxRate({ displayName: 'Consumption tax', percentage: 10, inclusive: false });
    const five = await taxRate({ displayName: 'VAT', percentage: 5, inclusive: false });
    const c = await customer();
    // ¥1,235 at 10 % = 123.5 → ¥124.
    const yen = await invoice({ customerId: c.id, currency: 'jpy', defaultTaxRateIds: [ten.id], lineItems: [{ description: 'Tea set', unitAmount: 1235 }] });
    expect([yen.subtotal, yen.tax, yen.total]).toEqual([1235, 124, 1359]);
    expect(await pdfText(yen.id)).toContain('Consumption tax ¥124 10% on ¥1,235');
    // 12.345 KWD (12345 fils) at 5 % = 617.25 fils → 617: 12.962 KWD.
    const dinar = await invoice({ customerId: c.id, currency: 'kwd', defaultTaxRateIds: [five.id], lineItems: [{ description: 'Service', unitAmount: 12345 }] });
    expect([dinar.subtotal, dinar.tax, dinar.total]).toEqual([12345, 617, 12962]);
    expect(await pdfText(dinar.id)).toMatch(/VAT 5% KWD\s?0\.617 on KWD\s?12\.345/);
  });

  it('should refuse unknown, inactive and other accounts\' rates, and an inclusive rate beside another on a line, naming the list', async () => {
    const c = await customer();
    const vat = await taxRate({ displayName: 'VAT', percentage: 19, inclusive: false });
    const incl = await taxRate({ displayName: 'VAT incl.', percentage: 19, inclusive: true });
    const old = await taxRate({ displayName: 'Old VAT', percentage: 16, inclusive: false });
    await ok(patch(`/v1/tax-rates/${old.id}`, { active: false }));
    const otherAccount = await app.createAccount();
    const foreign = await ok(post('/v1/tax-rates', { displayName: 'VAT', percentage: 20, inclusive: false }, otherAccount.testKey), 201);
    const body = (lineTaxRateIds: unknown, defaultTaxRateIds?: unknown) => ({
      customerId: c.id, currency: 'EUR', ...(defaultTaxRateIds === undefined ? {} : { defaultTaxRateIds }),
      lineItems: [{ description: 'A', unitAmount: 100 }, { description: 'B', unitAmount: 100, taxRateIds: lineTaxRateIds }],
    });
    expect(await refusal(post('/v1/invoices', body(['txr_doesnotexist0000000000'])))).toEqual([400, 'invalid_parameter', 'lineItems[1].taxRateIds']);
    expect(await refusal(post('/v1/invoices', body([old.id])))).toEqual([400, 'invalid_parameter', 'lineItems[1].taxRateIds']);
    expect(await refusal(post('/v1/invoices', body([vat.id], [foreign.id])))).toEqual([400, 'invalid_parameter', 'defaultTaxRateIds']);
    expect(await refusal(post('/v1/invoices', body([incl.id, vat.id])))).toEqual([400, 'invalid_parameter', 'lineItems[1].taxRateIds']);
    expect(await refusal(post('/v1/invoices', body([vat.id, vat.id])))).toEqual([400, 'invalid_parameter', 'lineItems[1].taxRateIds']);
    expect(await refusal(post('/v1/invoices', body(['vat'])))).toEqual([400, 'invalid_parameter', 'lineItems[1].taxRateIds[0]']);
    expect((await get('/v1/invoices')).body.meta.total).toBe(0);
    // A draft keeps a rate deactivated after it was put on it; a new one cannot name it.
    const draft = await invoice(body([vat.id]));
    await ok(patch(`/v1/tax-rates/${vat.id}`, { active: false }));
    expect((await ok(patch(`/v1/invoices/${draft.id}`, { memo: 'Kept' }))).tax).toBe(19);
    expect(await refusal(patch(`/v1/invoices/${draft.id}`, { defaultTaxRateIds: [vat.id] }))).toEqual([400, 'invalid_parameter', 'defaultTaxRateIds']);
  });

  it('should drop the taxes of an exempt customer and print the reverse-charge notice for a reverse one, in its language', async () => {
    const vat = await taxRate({ displayName: 'VAT', percentage: 20, inclusive: false });
    const incl = await taxRate({ displayName: 'VAT incl.', percentage: 20, inclusive: true });
    const lines = [{ description: 'Licence', unitAmount: 10000 }, { description: 'Boxed copy', unitAmount: 1200, taxRateIds: [incl.id] }];
    const exempt = await customer({ taxExempt: 'exempt' });
    expect(exempt.taxExempt).toBe('exempt');
    const a = await invoice({ customerId: exempt.id, currency: 'EUR', defaultTaxRateIds: [vat.id], lineItems: lines });
    expect(a).toMatchObject({ subtotal: 11200, tax: 0, total: 11200, amountDue: 11200, customerTaxExempt: 'exempt' });
    expect(breakdown(a)).toEqual([[vat.id, 10000, 0], [incl.id, 1200, 0]]);
    expect(await pdfText(a.id)).not.toContain('Reverse charge');

    const reverse = await customer({ locale: 'fr' });
    expect(reverse.taxExempt).toBe('none');
    expect((await ok(patch(`/v1/customers/${reverse.id}`, { taxExempt: 'reverse' }))).taxExempt).toBe('reverse');
    const b = await invoice({ customerId: reverse.id, currency: 'EUR', defaultTaxRateIds: [vat.id], lineItems: lines });
    expect(b).toMatchObject({ tax: 0, total: 11200, customerTaxExempt: 'reverse' });
    expect(await pdfText(b.id)).toContain('Autoliquidation : la TVA est due par le preneur.');
    await ok(patch(`/v1/customers/${reverse.id}`, { locale: 'en' }));
    expect(await pdfText(b.id)).toContain('Reverse charge: the customer is liable for the VAT on this invoice.');

    // Back to none: the draft's next change taxes it again (20 % of 10000; 1200 × 20 / 120 = 200 inside).
    await ok(patch(`/v1/customers/${reverse.id}`, { taxExempt: 'none' }));
    const taxedAgain = await ok(patch(`/v1/invoices/${b.id}`, { memo: 'Now taxed' }));
    expect([taxedAgain.tax, taxedAgain.total, taxedAgain.customerTaxExempt]).toEqual([2000, 13200, 'none']);
    expect(breakdown(taxedAgain)).toEqual([[vat.id, 10000, 2000], [incl.id, 1000, 200]]);
    expect(await refusal(patch(`/v1/customers/${reverse.id}`, { taxExempt: 'partial' }))).toEqual([400, 'invalid_parameter', 'taxExempt']);
  });

  it('should keep amountDue = total − creditApplied − paid when credit pays part of a taxed invoice', async () => {
    const vat = await taxRate({ displayName: 'VAT', percentage: 19, inclusive: false });
    const c = await customer();
    await ok(post(`/v1/customers/${c.id}/balance-transactions`, { currency: 'EUR', amount: 1000, description: 'Goodwill' }), 201);
    const inv = await invoice({ customerId: c.id, currency: 'EUR', defaultTaxRateIds: [vat.id], lineItems: [{ description: 'Work', unitAmount: 10000 }] });
    const sent = await ok(post(`/v1/invoices/${inv.id}/send`));
    // 10000 + 1900 tax = 11900; 1000 of credit taken: 10900 due.
    expect([sent.total, sent.creditApplied, sent.amountDue]).toEqual([11900, 1000, 10900]);
    const paid = await ok(post(`/v1/invoices/${inv.id}/mark-paid`));
    expect([paid.amountPaid, paid.amountDue, paid.total - paid.creditApplied - paid.amountPaid]).toEqual([10900, 0, 0]);
  });
});

describe(`subscription taxes (${DIALECT})`, () => {
  const APR1 = '2027-04-01T00:00:00.000Z';
  const APR16 = '2027-04-16T00:00:00.000Z';
  const MAY1 = '2027-05-01T00:00:00.000Z';

  it('should tax every invoice of a subscription with its defaultTaxRateIds, proration lines included, and charge the taxed total', async () => {
    const vat = await taxRate({ displayName: 'VAT', percentage: 19, inclusive: false });
    const tc = await ok(post('/v1/test-clocks', { frozenTime: APR1 }), 201);
    const product = await ok(post('/v1/products', { name: 'Plan' }), 201);
    const small = await ok(post('/v1/prices', { productId: product.id, unitAmount: 1000, currency: 'eur', recurring: { interval: 'month' } }), 201);
    const large = await ok(post('/v1/prices', { productId: product.id, unitAmount: 3000, currency: 'eur', recurring: { interval: 'month' } }), 201);
    const c = await customer({ testClockId: tc.id });
    await ok(post(`/v1/customers/${c.id}/payment-methods`, { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } }), 201);
    expect(await refusal(post('/v1/subscriptions', { customerId: c.id, priceId: small.id, defaultTaxRateIds: ['txr_unknown00000000000000'] }))).toEqual([400, 'invalid_parameter', 'defaultTaxRateIds']);
    const s = await ok(post('/v1/subscriptions', { customerId: c.id, priceId: small.id, defaultTaxRateIds: [vat.id] }), 201);
    expect([s.status, s.defaultTaxRateIds]).toEqual(['active', [vat.id]]);
    const [first] = (await get(`/v1/subscriptions/${s.id}/invoices?sortDirection=asc`)).body.data;
    // 1000 + 19 % = 1190, charged whole.
    expect([first.status, first.subtotal, first.tax, first.total, first.amountPaid, first.defaultTaxRateIds]).toEqual(['paid', 1000, 190, 1190, 1190, [vat.id]]);
    const [payment] = (await get(`/v1/subscriptions/${s.id}/payments`)).body.data;
    expect(payment.amount).toBe(1190);

    // Half way through April (15 of 30 days left): −500 for the unused small plan, +1500 for the large one.
    await ok(post(`/v1/test-clocks/${tc.id}/advance`, { frozenTime: APR16 }));
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: large.id }));
    const upcoming = await ok(get(`/v1/subscriptions/${s.id}/upcoming-invoice`));
    // −500 + 1500 + 3000 = 4000 at 19 % = 760.
    expect([upcoming.subtotal, upcoming.tax, upcoming.total]).toEqual([4000, 760, 4760]);
    await ok(post(`/v1/test-clocks/${tc.id}/advance`, { frozenTime: MAY1 }));
    const [, renewal] = (await get(`/v1/subscriptions/${s.id}/invoices?sortDirection=asc`)).body.data;
    expect(renewal.lineItems.map((l: Json) => [l.amount, l.proration])).toEqual([[-500, true], [1500, true], [3000, false]]);
    expect([renewal.status, renewal.subtotal, renewal.tax, renewal.total, renewal.amountPaid]).toEqual(['paid', 4000, 760, 4760, 4760]);
    expect(breakdown(renewal)).toEqual([[vat.id, 4000, 760]]);
    expect(renewal.taxBreakdown).toEqual(upcoming.taxBreakdown);

    // Taken off: the next invoice carries no tax.
    const untaxed = await ok(patch(`/v1/subscriptions/${s.id}`, { defaultTaxRateIds: [] }));
    expect(untaxed.defaultTaxRateIds).toEqual([]);
    expect(await ok(get(`/v1/subscriptions/${s.id}/upcoming-invoice`))).toMatchObject({ subtotal: 3000, tax: 0, total: 3000, taxBreakdown: [] });
  });

  it('should tax a net proration credit with its sign and keep the rest as the customer\'s credit', async () => {
    const vat = await taxRate({ displayName: 'VAT', percentage: 19, inclusive: false });
    const tc = await ok(post('/v1/test-clocks', { frozenTime: APR1 }), 201);
    const product = await ok(post('/v1/products', { name: 'Plan' }), 201);
    const large = await ok(post('/v1/prices', { productId: product.id, unitAmount: 3000, currency: 'eur', recurring: { interval: 'month' } }), 201);
    const small = await ok(post('/v1/prices', { productId: product.id, unitAmount: 1000, currency: 'eur', recurring: { interval: 'month' } }), 201);
    const c = await customer({ testClockId: tc.id });
    await ok(post(`/v1/customers/${c.id}/payment-methods`, { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } }), 201);
    const s = await ok(post('/v1/subscriptions', { customerId: c.id, priceId: large.id, defaultTaxRateIds: [vat.id] }), 201);
    await ok(post(`/v1/test-clocks/${tc.id}/advance`, { frozenTime: APR16 }));
    // To the small plan from now: −1500 (the unused half) + 1000 (a new month) = −500; tax −95; −595 becomes credit.
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: small.id, billingCycleAnchor: 'now' }));
    const invoices = (await get(`/v1/subscriptions/${s.id}/invoices?sortDirection=asc`)).body.data;
    const credit = invoices[invoices.length - 1];
    expect([credit.subtotal, credit.tax, credit.total, credit.amountDue, credit.status]).toEqual([-500, -95, -595, 0, 'paid']);
    expect((await ok(get(`/v1/customers/${c.id}`))).creditBalance).toEqual({ EUR: 595 });
  });
});
