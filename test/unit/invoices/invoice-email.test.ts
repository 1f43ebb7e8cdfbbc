import { invoiceEmail } from '../../../src/modules/invoices/invoice-email';
import { invoiceDocument } from './invoice-fixtures';

const squash = (text: string) => text.replace(/\s+/g, ' ');

describe('invoice e-mail', () => {
  it('should write subject, text and HTML in English', () => {
    const mail = invoiceEmail(invoiceDocument(), { hostedUrl: 'https://pay.example.com/invoices/in_test_0001' });
    expect(mail.subject).toBe('Invoice INV-000042 from Acme Tools Ltd');
    expect(mail.text).toBe(
      [
        'Hello Jane Doe,',
        '',
        'Acme Tools Ltd has sent you invoice INV-000042 for $12.00.',
        'Due date: Dec 27, 2026',
        '',
        'Subtotal: $12.00',
        'Total: $12.00',
        'Amount due: $12.00',
        '',
        'Pay online: https://pay.example.com/invoices/in_test_0001',
        '',
        'The invoice is attached as a PDF.',
        '',
        'Acme Tools Ltd',
        '',
      ].join('\n'),
    );
    expect(mail.html).toContain('<html lang="en">');
    expect(mail.html).toContain('<p>Acme Tools Ltd has sent you invoice <strong>INV-000042</strong> for <strong>$12.00</strong>.</p>');
    expect(mail.html).toContain('<a href="https://pay.example.com/invoices/in_test_0001">');
    expect(mail.html).toContain('<p>The invoice is attached as a PDF.</p>');
  });

  it('should write in German for a German customer, with the amount as Germans write it', () => {
    const mail = invoiceEmail(invoiceDocument({ locale: 'de', currency: 'EUR' }));
    expect(mail.subject).toBe('Rechnung INV-000042 von Acme Tools Ltd');
    expect(squash(mail.text)).toContain('Guten Tag Jane Doe,');
    expect(squash(mail.text)).toContain('Acme Tools Ltd hat Ihnen die Rechnung INV-000042 über 12,00 € gesendet.');
    expect(squash(mail.text)).toContain('Fällig am: 27.12.2026');
    expect(mail.text).toContain('Die Rechnung ist als PDF angehängt.');
    expect(mail.html).toContain('<html lang="de">');
  });

  it('should write in French', () => {
    const mail = invoiceEmail(invoiceDocument({ locale: 'fr', currency: 'EUR', total: 123456, customer: { name: null, email: 'a@example.com' } }));
    expect(mail.subject).toBe('Facture INV-000042 de la part de Acme Tools Ltd');
    expect(mail.text.startsWith('Bonjour,\n')).toBe(true);
    expect(squash(mail.text)).toContain("Acme Tools Ltd vous a envoyé la facture INV-000042 d'un montant de 1 234,56 €.");
    expect(squash(mail.text)).toContain("Date d'échéance : 27/12/2026");
    expect(mail.text).toContain('La facture est jointe au format PDF.');
  });

  it('should write in English for an unknown locale, and leave out what the invoice lacks', () => {
    const mail = invoiceEmail(invoiceDocument({ locale: 'ja', currency: 'JPY', total: 1200, dueDate: null, customer: { name: null, email: 'a@example.com' } }));
    expect(mail.subject).toBe('Invoice INV-000042 from Acme Tools Ltd');
    expect(mail.text).toContain('Hello,\n');
    expect(mail.text).toContain('for ¥1,200.');
    expect(mail.text).not.toContain('Due date');
    expect(mail.text).not.toContain('Pay online');
    expect(mail.html).not.toContain('<a ');
  });

  it("should escape the merchant's and the customer's text in the HTML", () => {
    const mail = invoiceEmail(
      invoiceDocument({
        merchant: { name: 'Tom & Jerry <script>alert(1)</script>' },
        customer: { name: `"><img src=x onerror=alert(2)>`, email: 'x@example.com' },
        number: 'INV-<b>1</b>',
      }),
      { hostedUrl: 'https://pay.example.com/i?a=1&b="2"' },
    );
    expect(mail.html).not.toMatch(/<script|<img|<b>/);
    expect(mail.html).toContain('Tom &amp; Jerry &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail.html).toContain('Hello &quot;&gt;&lt;img src=x onerror=alert(2)&gt;,');
    expect(mail.html).toContain('<a href="https://pay.example.com/i?a=1&amp;b=&quot;2&quot;">');
    // The plain text is not HTML: it keeps the text as written.
    expect(mail.text).toContain('Tom & Jerry <script>alert(1)</script> has sent you');
  });

  it('should keep a name with line breaks on one line of the subject', () => {
    const mail = invoiceEmail(invoiceDocument({ merchant: { name: 'Acme\r\nBcc: victim@example.com' } }));
    expect(mail.subject).toBe('Invoice INV-000042 from Acme Bcc: victim@example.com');
    expect(mail.subject).not.toMatch(/[\r\n]/);
  });

  it("should write dates and amounts in the forms of the locale's region", () => {
    const doc = { currency: 'EUR', total: 246912, dueDate: '2026-11-29T00:00:00.000Z' };
    const cases: Array<[string, string, string, string]> = [
      // locale, greeting (the language), total, due date
      ['en', 'Hello Jane Doe,', '€2,469.12', 'Due date: Nov 29, 2026'],
      ['en-GB', 'Hello Jane Doe,', '€2,469.12', 'Due date: 29 Nov 2026'],
      ['de', 'Guten Tag Jane Doe,', '2.469,12 €', 'Fällig am: 29.11.2026'],
      ['de-AT', 'Guten Tag Jane Doe,', '€ 2.469,12', 'Fällig am: 29.11.2026'],
      ['fr', 'Bonjour Jane Doe,', '2 469,12 €', "Date d'échéance : 29/11/2026"],
      ['fr-CH', 'Bonjour Jane Doe,', '2 469.12 €', "Date d'échéance : 29.11.2026"],
      // No texts in Dutch: English words, with the region's forms where English has them.
      ['nl-NL', 'Hello Jane Doe,', '€2,469.12', 'Due date: 29 Nov 2026'],
    ];
    for (const [locale, greeting, total, due] of cases) {
      const text = squash(invoiceEmail(invoiceDocument({ ...doc, locale })).text);
      expect([locale, text.includes(greeting), text.includes(total), text.includes(due)]).toEqual([locale, true, true, true]);
    }
    // Swiss German: francs with the apostrophe Intl groups them with.
    expect(squash(invoiceEmail(invoiceDocument({ ...doc, currency: 'CHF', locale: 'de-CH' })).text)).toMatch(/über CHF 2['’]469\.12 gesendet/);
  });

  it('should keep the French thousands separator a no-break space', () => {
    const text = invoiceEmail(invoiceDocument({ locale: 'fr', currency: 'EUR', total: 246912 })).text;
    // Intl writes U+202F (narrow no-break space) between the thousands and U+00A0 before the euro sign.
    expect(text).toContain('2\u202f469,12\u00a0€');
  });

  it('should say so when the invoice is a test-mode one, in subject, text and HTML', () => {
    const test = invoiceEmail(invoiceDocument({ livemode: false }), { hostedUrl: 'https://pay.example.com/invoice/in_1' });
    expect(test.subject).toBe('[Test mode] Invoice INV-000042 from Acme Tools Ltd');
    expect(test.text.split('\n')[0]).toBe('Test mode: no real money is involved.');
    expect(test.html).toContain('<p><strong>Test mode: no real money is involved.</strong></p>');
    const german = invoiceEmail(invoiceDocument({ livemode: false, locale: 'de' }));
    expect(german.subject).toBe('[Testmodus] Rechnung INV-000042 von Acme Tools Ltd');
    expect(german.text).toContain('Testmodus: es fließt kein echtes Geld.');
    const live = invoiceEmail(invoiceDocument({ livemode: true }));
    expect(live.subject).not.toContain('Test');
    expect(live.text).not.toContain('Test mode');
  });

  it('should give the HTML part a title, and carry the pay link in the plain text too', () => {
    const mail = invoiceEmail(invoiceDocument({ merchant: { name: 'Tom & Jerry' } }), { hostedUrl: 'https://pay.example.com/invoice/in_1' });
    expect(mail.html).toContain('<title>Invoice INV-000042 from Tom &amp; Jerry</title>');
    expect(mail.text).toContain('Pay online: https://pay.example.com/invoice/in_1\n');
  });

  it('should refuse a pay link that is not http(s)', () => {
    expect(() => invoiceEmail(invoiceDocument(), { hostedUrl: 'javascript:alert(1)' })).toThrow(RangeError);
  });
});
