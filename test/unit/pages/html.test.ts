import { escapeHtml, html } from '../../../rest/pages/html';
import { isPagePath } from '../../../rest/pages/pages.routes';

describe('html template', () => {
  it('should escape every character that can open markup or leave an attribute', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });

  it('should escape interpolated values but not nested html output', () => {
    const name = '<img src=x onerror=alert(1)>';
    const item = html`<li>${name}</li>`;
    expect(html`<ul>${item}</ul>`.value).toBe('<ul><li>&lt;img src=x onerror=alert(1)&gt;</li></ul>');
  });

  it('should join lists and drop null, undefined and false', () => {
    expect(html`${['<a>', html`<b>`]}|${null}|${undefined}|${false}|${0}`.value).toBe('&lt;a&gt;<b>||||0');
  });
});

describe('page paths', () => {
  it('should keep the hosted pages (API.md §11, §16) outside the API namespace', () => {
    for (const path of ['/', '/checkout/cs_123', '/pay/summer-sale', '/dashboard', '/docs', '/v1x', '/favicon.ico']) {
      expect([path, isPagePath(path)]).toEqual([path, true]);
    }
  });

  it('should leave the API namespace to JSON', () => {
    for (const path of ['/v1', '/v1/customers', '/api/v1/public/checkout-sessions/cs_1', '/V1/customers', '/v2/x', '/api', '/graphql', '/graphql/x', '/health', '/ready']) {
      expect([path, isPagePath(path)]).toEqual([path, false]);
    }
  });
});
