import { html } from './html';
import type { Page } from './page';
import { pageStyle, type PageStyle } from './page-layout';
import { dashboardAssets } from './page-assets';
import { DASHBOARD_SCRIPT } from './dashboard.script';

// The permissions a read-only dashboard key needs: every section it shows.
const READ_ONLY = [
  'payments', 'refunds', 'customers', 'subscriptions', 'invoices', 'events', 'checkout_sessions', 'payment_links', 'webhook_endpoints',
].map((r) => `${r}:read`).join(',');

const OWN_STYLE =
  '.bar{display:flex;flex-wrap:wrap;align-items:center;gap:.75rem;margin:0 0 1rem}.bar h1{margin:0;font-size:1.25rem}.bar .grow{flex:1}' +
  '.testmode{background:#fff4e0;color:#7a4100;border:1px solid #f0c27a;border-radius:6px;padding:.25rem .75rem;font-weight:700;letter-spacing:.05em}' +
  '.conn{font-size:.875rem;border-radius:999px;padding:.1rem .6rem;border:1px solid #b8bfca;color:#5b6270}.conn.live{color:#0a5c34;border-color:#a3d9b9;background:#e8f6ee}.conn.down{color:#8a0f2d;border-color:#f3b3c1;background:#fdecef}' +
  'button.small{width:auto;padding:.35rem .8rem;font-size:.875rem}button.ghost{background:#fff;color:#1a1f36;border:1px solid #b8bfca}' +
  '.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(15rem,1fr));gap:1rem;margin:0 0 1.5rem}' +
  '.card{border:1px solid #e3e8ee;border-radius:8px;padding:.75rem 1rem;min-width:0}.card h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:#5b6270;margin:0 0 .5rem}' +
  '.card.chart{grid-column:1/-1}.figure{font-size:1.5rem;font-weight:600;margin:0}.denied{color:#8a0f2d;font-size:.875rem}' +
  '.cols{display:grid;grid-template-columns:minmax(0,2fr) minmax(0,1fr);gap:1.5rem}@media (max-width:60rem){.cols{grid-template-columns:1fr}}' +
  'section h2.title{font-size:1.1rem;margin:0 0 .5rem}' +
  'table{border-collapse:collapse;width:100%;font-size:.875rem}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #eef0f3;white-space:nowrap}td.wrap{white-space:normal;overflow-wrap:anywhere}th{color:#5b6270;font-weight:600}' +
  '#payments-table,#browse-table,#detail{overflow-x:auto}#payments-table td:nth-child(4){white-space:normal;overflow-wrap:anywhere;min-width:6rem}' +
  '.filters{display:flex;gap:.5rem;flex-wrap:wrap;margin:0 0 .5rem}.filters input,.filters select{width:auto;flex:1 1 10rem;padding:.4rem .6rem;font:inherit;border:1px solid #b8bfca;border-radius:6px}' +
  '.pager{display:flex;gap:.5rem;align-items:center;justify-content:flex-end;margin:.5rem 0 0;font-size:.875rem}' +
  '#feed{list-style:none;padding:0;margin:0;max-height:32rem;overflow:auto;font-size:.875rem}#feed li{padding:.35rem 0;border-bottom:1px solid #eef0f3;display:flex;gap:.5rem;justify-content:space-between}#feed time{color:#5b6270;white-space:nowrap}' +
  '.st{border-radius:4px;padding:0 .35rem;font-size:.8rem;background:#eef0f3}.st.succeeded,.st.paid,.st.active{background:#e8f6ee;color:#0a5c34}.st.failed,.st.past_due{background:#fdecef;color:#8a0f2d}' +
  '#detail{border:1px solid #c6ccfa;border-radius:8px;padding:1rem;margin:0 0 1.5rem;background:#fbfbff}#detail h3{font-size:.95rem;margin:1rem 0 .25rem}' +
  'dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0;font-size:.875rem}dl.kv dt{color:#5b6270}dl.kv dd{margin:0;overflow-wrap:anywhere}' +
  'textarea{box-sizing:border-box;width:100%;font:inherit;font-family:monospace;padding:.6rem;border:1px solid #b8bfca;border-radius:6px}';

let style: PageStyle | undefined;
const dashboardStyle = () => (style ??= pageStyle(OWN_STYLE + dashboardAssets().uplotCss));

/**
 * `/dashboard`: the live dashboard (issue 25). The page itself holds no data: it signs in with an
 * API key pasted by the user (kept in sessionStorage, sent as the Authorization header and in
 * graphql-ws connectionParams) and reads everything through GraphQL. Its scripts are graphql-ws's
 * and uPlot's browser builds, served by this service, and its own, all allowed by hash.
 */
export const dashboardPage: Page = {
  path: '/dashboard',
  render() {
    const { graphqlWs, uplot } = dashboardAssets();
    return {
      title: 'Dashboard',
      wide: true,
      style: dashboardStyle(),
      assets: [{ path: graphqlWs.path, hash: graphqlWs.hash }, { path: uplot.path, hash: uplot.hash }],
      script: DASHBOARD_SCRIPT,
      body: html`<div class="bar"><h1>Payorch dashboard</h1><span id="test-mode" class="testmode" hidden>TEST MODE</span><span class="grow"></span><span id="conn" class="conn" role="status" hidden></span><button id="sign-out" class="small ghost" type="button" hidden>Sign out</button></div>
<section id="sign-in">
<p>Paste an API key. It stays in this tab only (sessionStorage) and is sent to this service's GraphQL API, never in a URL or cookie.</p>
<div class="field"><label for="api-key">API key</label><textarea id="api-key" rows="2" autocomplete="off" spellcheck="false" placeholder="sk_test_…"></textarea></div>
<div id="sign-in-error" class="status" role="alert"></div>
<button id="sign-in-button" type="button">Sign in</button>
<p class="hint">Use a read-only key. Make one with:<br><code>payorch keys create --account &lt;acct_…&gt; --mode test --name dashboard --permissions ${READ_ONLY}</code></p>
</section>
<div id="app" hidden>
<div id="overview" class="cards">
<div class="card chart" data-section="payments"><h2>Payments per minute, last hour</h2><div id="chart"></div><p class="meta" id="chart-legend"></p></div>
<div class="card" data-section="payments"><h2>Authorisation rate per gateway (1 h)</h2><div id="ov-gateways"></div></div>
<div class="card" data-section="payments"><h2>Volume today</h2><div id="ov-volume"></div></div>
<div class="card" data-section="refunds"><h2>Refunds today</h2><div id="ov-refunds"></div></div>
<div class="card" data-section="subscriptions"><h2>Subscriptions</h2><div id="ov-subscriptions"></div></div>
<div class="card" data-section="invoices"><h2>Unpaid invoices</h2><div id="ov-invoices"></div></div>
</div>
<section id="detail" hidden></section>
<div class="cols">
<section id="payments"><h2 class="title">Payments</h2>
<div class="filters"><input id="payment-search" type="search" placeholder="Search description, metadata, e-mail" aria-label="Search payments"><select id="payment-status" aria-label="Status"><option value="">Any status</option><option>succeeded</option><option>failed</option><option>pending</option><option>requires_review</option><option>canceled</option></select></div>
<div id="payments-table"></div>
<div class="pager"><button id="prev-page" class="small ghost" type="button">Previous</button><span id="page-info"></span><button id="next-page" class="small ghost" type="button">Next</button></div>
</section>
<section id="events"><h2 class="title">Live events</h2>
<div class="filters"><select id="feed-type" aria-label="Event type"><option value="">All types</option><option value="payment.">payment.*</option><option value="refund.">refund.*</option><option value="customer.">customer.*</option><option value="subscription.">subscription.*</option><option value="invoice.">invoice.*</option><option value="checkout.session.">checkout.session.*</option><option value="payment_link.">payment_link.*</option></select></div>
<ul id="feed" aria-live="polite"></ul>
</section>
</div>
<section id="browse"><h2 class="title">Browse</h2>
<div class="filters"><select id="browse-kind" aria-label="Resource"><option value="customers">Customers</option><option value="subscriptions">Subscriptions</option><option value="invoices">Invoices</option><option value="checkoutSessions">Checkout sessions</option><option value="paymentLinks">Payment links</option><option value="webhookEndpoints">Webhook endpoints</option></select><input id="browse-search" type="search" placeholder="Search" aria-label="Search"><select id="browse-status" aria-label="Resource status"></select></div>
<div id="browse-table"></div>
<div class="pager"><button id="browse-prev" class="small ghost" type="button">Previous</button><span id="browse-info"></span><button id="browse-next" class="small ghost" type="button">Next</button></div>
</section>
</div>`,
    };
  },
};
