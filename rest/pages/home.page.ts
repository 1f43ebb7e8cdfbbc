import { html } from './html';
import type { Page } from './page';

/** `/`: says the service answers and where its APIs are. */
export const homePage: Page = {
  path: '/',
  render(services) {
    const base = services.config.publicUrl ?? '';
    return {
      title: 'Running',
      body: html`<h1>Payorch is running</h1>
<ul>
<li>REST API: <code>${base}/v1</code> (send <code>Authorization: Bearer &lt;key&gt;</code>; every route also answers under <code>/api/v1</code>)</li>
<li>GraphQL: <code>${base}/graphql</code> (same keys)</li>
<li>Status: <a href="/health">/health</a> · <a href="/ready">/ready</a></li>
</ul>`,
    };
  },
};
