import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../helpers/app';
import { parseMime, textOf } from '../helpers/mime';
import { PdfReader } from '../unit/invoices/pdf-text';

/*
 * An issued invoice is a fixed document (API.md §12): the seller and the buyer it names are those
 * of the moment it left `draft` (sent, finalised by its charge, paid at once, marked paid, voided),
 * whatever the account and the customer change after; its PDF stays the same bytes. A draft
 * names them as they are now. And the totals the hosted page and the e-mail show: a row per tax
 * rate, computed by hand here.
 */

let app: TestApp;
const reader = new PdfReader();
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
});
afterAll(async () => {
  reader.close();
  await app.stop();
});

type Json = Record<string, any>;

/** A fresh account (its own name and address to change) with its key's request helpers. */
async function merchant() {
  const { testKey: key, accountId } = await app.createAccount();
  const call = async (method: 'GET' | 'POST' | 'PATCH', p: string, body?: Json, status = method === 'POST' && !/\/v1\/invoices\/|\/advance$/.test(p) ? 201 : 200) => {
    const res = await app.request(method, p, { key, body });
    expect([method, p, res.status, res.body?.error ?? null]).toEqual([method, p, status, null]);
    return res;
  };
  await call('PATCH', '/v1/account', {
    name: 'Alte Firma GmbH', taxId: 'DE111111111', supportEmail: 'alt@firma.example',
    address: { line1: 'Altstraße 1', postalCode: '10115', city: 'Berlin', country: 'DE' },
  });
  const customer = async (extra: Json = {}) => (await call('POST', '/v1/customers', {
    email: `buyer-${Math.random().toString(36).slice(2)}@example.com`, name: 'Erika Alt', locale: 'en',
    address: { line1: '1 Old Road', postalCode: 'N1 1AA', city: 'London', country: 'GB' }, taxIds: [{ type: 'gb_vat', value: 'GB111111111' }],
    ...extra,
  })).body.data;
  const draft = async (customerId: string, extra: Json = {}) =>
    (await call('POST', '/v1/invoices', { customerId, currency: 'eur', lineItems: [{ description: 'Consulting', unitAmount: 10000 }], ...extra }, 201)).body.data;
  const pdf = async (id: string) => (await call('GET', `/v1/invoices/${id}/pdf`)).buffer;
  /** The account and the customer both change every detail the invoice names. */
  const changeEverything = async (customerId: string) => {
    await call('PATCH', '/v1/account', {
      name: 'Neue Firma AG', taxId: 'DE999999999', supportEmail: 'neu@firma.example',
      address: { line1: 'Neustraße 99', postalCode: '80331', city: 'München', country: 'DE' },
    });
    await call('PATCH', `/v1/customers/${customerId}`, {
      name: 'Erika Neu', email: `new-${Math.random().toString(36).slice(2)}@example.com`, locale: 'de',
      address: { line1: '99 New Street', postalCode: 'M1 1AA', city: 'Manchester', country: 'GB' }, taxIds: [{ type: 'gb_vat', value: 'GB999999999' }],
    });
  };
  return { key, accountId, call, customer, draft, pdf, changeEverything };
}

/** The PDF's text as lines, trimmed, no-break spaces read as spaces. */
const linesOf = (pdf: Buffer) => reader.text(pdf, { raw: true }).split('\n').map((l) => l.replace(/[\u00a0\u202f]/g, ' ').trim());

const OLD = ['Alte Firma GmbH', 'Altstraße 1', '10115 Berlin', 'VAT: DE111111111', 'Contact: alt@firma.example', 'Erika Alt', '1 Old Road', 'London', 'VAT: GB111111111'];
const NEW = ['Neue Firma AG', 'Neustraße 99', '80331 München', 'USt-IdNr.: DE999999999', 'Kontakt: neu@firma.example', 'Erika Neu', '99 New Street', 'Manchester', 'USt-IdNr.: GB999999999'];

function expectParties(pdf: Buffer, shown: string[], gone: string[], label: string): void {
  const lines = linesOf(pdf);
  for (const text of shown) expect([label, text, lines.includes(text)]).toEqual([label, text, true]);
  for (const text of gone) expect([label, text, lines.includes(text)]).toEqual([label, text, false]);
}

describe('an issued invoice keeps its parties', () => {
  it('should print the seller and buyer it was sent to, the same bytes, after both change; a draft prints the new ones', async () => {
    const m = await merchant();
    const buyer = await m.customer();
    const sent = await m.draft(buyer.id);
    const draft = await m.draft(buyer.id);
    await m.call('POST', `/v1/invoices/${sent.id}/send`);
    const before = await m.pdf(sent.id);
    expectParties(before, OLD, NEW, 'sent, before');

    await m.changeEverything(buyer.id);
    const after = await m.pdf(sent.id);
    expect(Buffer.compare(after, before)).toBe(0);
    expectParties(after, OLD, NEW, 'sent, after');
    // The draft shows them as they are now, in the customer's new language.
    expectParties(await m.pdf(draft.id), NEW, OLD, 'draft');
    // Its hosted page too: the seller's name and the language it was sent with.
    const view = (await app.request('GET', `/v1/public/invoices/${sent.id}`)).body.data;
    expect([view.merchantName, view.locale]).toEqual(['Alte Firma GmbH', 'en']);
    const page = await app.request('GET', `/invoice/${sent.id}`);
    expect(page.text).toContain('<html lang="en">');
    expect(page.text).toContain('Alte Firma GmbH');
    expect(page.text).not.toContain('Neue Firma AG');

    // Sent, then paid: still the parties it was sent to.
    await m.call('POST', `/v1/invoices/${sent.id}/mark-paid`);
    expectParties(await m.pdf(sent.id), OLD, NEW, 'sent, then paid');
  });

  it.each(['mark-paid', 'void', 'pay'])('should keep the parties of an invoice issued from draft by %s', async (move) => {
    const m = await merchant();
    const buyer = await m.customer();
    const inv = await m.draft(buyer.id);
    // `pay` charges the draft: its settle finalises it (the batch's statement, for one).
    await m.call('POST', `/v1/invoices/${inv.id}/${move}`, move === 'pay' ? { paymentMethod: 'pm_card_visa' } : undefined);
    const before = await m.pdf(inv.id);
    await m.changeEverything(buyer.id);
    const after = await m.pdf(inv.id);
    expect(Buffer.compare(after, before)).toBe(0);
    expectParties(after, OLD, NEW, move);
  });

  it("should keep the parties of a subscription's invoices, those its creation charged and the billing run's renewal", async () => {
    const m = await merchant();
    const clock = (await m.call('POST', '/v1/test-clocks', { frozenTime: '2026-03-01T10:00:00Z' })).body.data;
    const buyer = await m.customer({ testClockId: clock.id });
    await m.call('POST', `/v1/customers/${buyer.id}/payment-methods`, { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } });
    const product = (await m.call('POST', '/v1/products', { name: 'Plan' })).body.data;
    const price = (await m.call('POST', '/v1/prices', { productId: product.id, unitAmount: 2500, currency: 'eur', recurring: { interval: 'month' } })).body.data;
    const sub = (await m.call('POST', '/v1/subscriptions', { customerId: buyer.id, priceId: price.id })).body.data;
    await m.call('POST', `/v1/test-clocks/${clock.id}/advance`, { frozenTime: '2026-04-01T11:00:00Z' });
    const invoices = (await m.call('GET', `/v1/subscriptions/${sub.id}/invoices?sortDirection=asc`)).body.data as Json[];
    expect(invoices.map((i) => i.status)).toEqual(['paid', 'paid']);
    const rows = await app.server.services.db.select<{ id: string; parties: string | null }>('SELECT id, parties FROM invoices WHERE subscription_id = $1', [sub.id]);
    expect(rows.map((r) => JSON.parse(r.parties as string).customer.name)).toEqual(['Erika Alt', 'Erika Alt']);
    const before = await Promise.all(invoices.map((i) => m.pdf(i.id)));
    await m.changeEverything(buyer.id);
    for (const [n, inv] of invoices.entries()) {
      const after = await m.pdf(inv.id);
      expect(Buffer.compare(after, before[n])).toBe(0);
      expectParties(after, OLD, NEW, inv.billingReason ?? inv.number);
    }
  });

  it("should keep a subscription draft's parties from its making when its charge settles one by one (a decline), as the batch's settle does", async () => {
    const m = await merchant();
    const buyer = await m.customer();
    // Saved without trouble, declined at its charge.
    await m.call('POST', `/v1/customers/${buyer.id}/payment-methods`, { card: { number: '4000000000000341', expMonth: 12, expYear: 2040, cvc: '123' } });
    const product = (await m.call('POST', '/v1/products', { name: 'Plan' })).body.data;
    const price = (await m.call('POST', '/v1/prices', { productId: product.id, unitAmount: 2500, currency: 'eur', recurring: { interval: 'month' } })).body.data;
    const invoices = app.server.services.invoices;
    const real = invoices.chargeManyForSubscriptions.bind(invoices);
    // The first charge has not answered by the end of the request: the draft waits, processing.
    let charged: { id: string; amount: number } | undefined;
    const spy = jest.spyOn(invoices, 'chargeManyForSubscriptions').mockImplementationOnce(async (items, width) => {
      const outcomes = await real(items, width);
      for (const [id, outcome] of outcomes) {
        if ('payment' in outcome) {
          charged = outcome.payment;
          outcomes.set(id, { payment: { ...outcome.payment, status: 'pending' } });
        }
      }
      return outcomes;
    });
    let sub: Json;
    try {
      sub = (await m.call('POST', '/v1/subscriptions', { customerId: buyer.id, priceId: price.id })).body.data;
    } finally {
      spy.mockRestore();
    }
    const [row] = await app.server.services.db.select<{ status: string; payment_status: string; latest_payment_id: string }>('SELECT status, payment_status, latest_payment_id FROM invoices WHERE id = $1', [sub!.latestInvoiceId]);
    expect([row.status, row.payment_status, row.latest_payment_id]).toEqual(['draft', 'processing', charged?.id]);
    await m.changeEverything(buyer.id);
    // Read after the change: the invoice settles from its (declined) payment one by one, finalised by that settle.
    const settled = (await m.call('GET', `/v1/invoices/${sub!.latestInvoiceId}`)).body.data;
    expect([settled.status, settled.paymentStatus]).toEqual(['sent', 'failed']);
    const draft = settled;
    expectParties(await m.pdf(draft.id), OLD, NEW, 'declined renewal draft');
  });

  it('should fall back to the live parties for an invoice issued before they were kept', async () => {
    const m = await merchant();
    const buyer = await m.customer();
    const inv = await m.draft(buyer.id);
    await m.call('POST', `/v1/invoices/${inv.id}/send`);
    await app.server.services.db.execute('UPDATE invoices SET parties = NULL WHERE id = $1', [inv.id]);
    await m.changeEverything(buyer.id);
    expectParties(await m.pdf(inv.id), NEW, OLD, 'issued without parties');
  });
});

describe('the totals with their taxes on the hosted page and in the e-mail', () => {
  /** A sent invoice: 100.00 at 19 % on top, and 107.00 with 7 % in it. */
  async function taxedInvoice(locale: string, taxExempt?: string) {
    const m = await merchant();
    const buyer = await m.customer({ locale, ...(taxExempt ? { taxExempt } : {}) });
    const vat = (await m.call('POST', '/v1/tax-rates', { displayName: 'VAT', percentage: 19, inclusive: false })).body.data;
    const reduced = (await m.call('POST', '/v1/tax-rates', { displayName: 'Reduced VAT', percentage: 7, inclusive: true })).body.data;
    const inv = await m.draft(buyer.id, {
      lineItems: [{ description: 'Consulting', unitAmount: 10000, taxRateIds: [vat.id] }, { description: 'Books', unitAmount: 10700, taxRateIds: [reduced.id] }],
    });
    const sent = (await m.call('POST', `/v1/invoices/${inv.id}/send`)).body.data;
    return { m, sent };
  }

  it('should show the subtotal, a row per rate, the total and the amount due on the German page (amounts by hand)', async () => {
    const { sent } = await taxedInvoice('de');
    // 10000 × 19 % = 1900 on top; 10700 holds 10700 × 7/107 = 700; subtotal 20700, tax 1900, total 22600.
    expect(sent).toMatchObject({ subtotal: 20700, tax: 1900, total: 22600, amountDue: 22600 });
    const view = (await app.request('GET', `/v1/public/invoices/${sent.id}`)).body.data;
    expect(view).toMatchObject({
      subtotal: 20700, tax: 1900, total: 22600, creditApplied: 0, amountPaid: 0, amountDue: 22600, reverseCharge: false,
      taxBreakdown: [
        { displayName: 'VAT', percentage: 19, inclusive: false, taxableAmount: 10000, amount: 1900 },
        { displayName: 'Reduced VAT', percentage: 7, inclusive: true, taxableAmount: 10000, amount: 700 },
      ],
    });
    const page = (await app.request('GET', `/invoice/${sent.id}`)).text.replace(/[\u00a0\u202f]/g, ' ');
    const totals = page.slice(page.indexOf('<ul class="totals">'), page.indexOf('</ul>', page.indexOf('<ul class="totals">')));
    const rows = [...totals.matchAll(/<li class="total-(\w+)"><span>(.*?)<\/span> <span class="total-amount">(.*?)<\/span><\/li>/g)].map((r) => [r[1], r[2], r[3]]);
    expect(rows).toEqual([
      ['subtotal', 'Zwischensumme', '207,00 €'],
      ['tax', 'VAT 19 %<br><small>auf 100,00 €</small>', '19,00 €'],
      ['tax', 'Reduced VAT 7 %<br><small>enthalten, auf 100,00 €</small>', '7,00 €'],
      ['total', 'Gesamtbetrag', '226,00 €'],
      ['due', 'Offener Betrag', '226,00 €'],
    ]);
    expect(page).not.toContain('Reverse Charge');
  });

  it('should put the same rows in the e-mail, and the reverse-charge notice when the customer accounts for the tax', async () => {
    const { sent } = await taxedInvoice('en');
    const mail = await mailOf(sent.id);
    const text = textOf(mail, 'text/plain')!.replace(/\r\n/g, '\n');
    expect(text).toContain([
      'Subtotal: €207.00',
      'VAT 19% (on €100.00): €19.00',
      'Reduced VAT 7% (included, on €100.00): €7.00',
      'Total: €226.00',
      'Amount due: €226.00',
    ].join('\n'));
    const htmlPart = textOf(mail, 'text/html')!;
    expect(htmlPart).toContain('VAT 19%<br><span style="color: #57606a; font-size: 12px;">on €100.00</span>');
    expect(htmlPart).toContain('<strong>€226.00</strong>');

    // Reverse charge: no tax, the notice in the mail and on the page, in French.
    const reverse = await taxedInvoice('fr', 'reverse');
    expect(reverse.sent).toMatchObject({ subtotal: 20700, tax: 0, total: 20700 });
    const notice = 'Autoliquidation : la TVA est due par le preneur.';
    expect(textOf(await mailOf(reverse.sent.id), 'text/plain')).toContain(notice);
    const page = (await app.request('GET', `/invoice/${reverse.sent.id}`)).text;
    expect(page).toContain(notice);
    expect((await app.request('GET', `/v1/public/invoices/${reverse.sent.id}`)).body.data.reverseCharge).toBe(true);
  });
});

/** The e-mail an invoice's send queued, as the .eml file the outbox writes without SMTP. */
async function mailOf(invoiceId: string) {
  const results = await app.server.services.mail.sendDue();
  const rows = await app.server.services.db.select<{ id: string }>("SELECT id FROM mail_outbox WHERE about_type = 'invoice' AND about_id = $1", [invoiceId]);
  expect(rows).toHaveLength(1);
  expect(results.map((r) => r.mailId)).toContain(rows[0].id);
  return parseMime(fs.readFileSync(path.join(app.config.dataDir, 'outbox', `${rows[0].id}.eml`)));
}
