import { createHash } from 'node:crypto';
import { html } from '../../../rest/pages/html';
import { CONTENT_SECURITY_POLICY, contentSecurityPolicy, pageDocument, pageScript } from '../../../rest/pages/page-layout';
import { CARD_FORM_SCRIPT } from '../../../rest/pages/card-form.script';

describe('page scripts and their policy', () => {
  it('should allow a page script by the sha256 of exactly its source, and let it call this origin only', () => {
    const script = pageScript('console.info(1)');
    expect(script.hash).toBe(`sha256-${createHash('sha256').update('console.info(1)').digest('base64')}`);
    const policy = contentSecurityPolicy(script);
    expect(policy).toContain(`script-src '${script.hash}'`);
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("form-action 'none'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe');
  });

  it('should give a page without a script no script-src and no connect-src', () => {
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/script-src|connect-src/);
  });

  it('should put the script in the document as hashed, and nothing when the page has none', () => {
    const doc = pageDocument({ title: 'T', body: html`<p>x</p>`, script: CARD_FORM_SCRIPT });
    const inline = /<script>([\s\S]*?)<\/script>/.exec(doc)![1];
    expect(`sha256-${createHash('sha256').update(inline).digest('base64')}`).toBe(CARD_FORM_SCRIPT.hash);
    expect(pageDocument({ title: 'T', body: html`<p>x</p>` })).not.toContain('<script');
  });

  it('should refuse a script that would end its element early', () => {
    expect(() => pageScript('var s = "</SCRIPT><b>";')).toThrow(/may not contain/);
    expect(() => pageScript('<!-- x')).toThrow(/may not contain/);
  });
});
