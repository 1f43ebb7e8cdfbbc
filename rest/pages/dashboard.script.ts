import { pageScript } from './page-layout';

/**
 * The dashboard's own script, inline and allowed by its hash. It uses two libraries the page
 * loads first from this service: graphql-ws (`graphqlWs`, the live events) and uPlot (`uPlot`,
 * the chart). The API key lives in sessionStorage and in memory only; it goes out as the
 * Authorization header of GraphQL requests over HTTP and in the WebSocket's connectionParams.
 *
 * Figures come from the `dashboard` query, fetched again (debounced) whenever a payment, refund,
 * subscription or invoice event arrives, and after the WebSocket reconnects. The live feed
 * subscribes after the newest event listed at sign-in and, when the socket comes back, resumes
 * after the last event it received (`events(after:)`): what was written meanwhile is replayed,
 * nothing is missed. Plain ES2017 in a string; keep `</` out of it.
 */
const SOURCE = String.raw`(function () {
  'use strict';
  var SLOT = 'payorch.dashboard.key';
  var $ = function (id) { return document.getElementById(id); };
  var key = null, client = null, chart = null, dropped = false, generation = 0;
  // The id of the newest event the feed has: where the live stream starts, and resumes.
  var cursor = null;
  var list = { page: 1, search: '', status: '', pages: 1 };
  var feed = [], seen = {}, timers = {};
  var NEEDS = { payments: 'payments:read', refunds: 'refunds:read', subscriptions: 'subscriptions:read', invoices: 'invoices:read' };
  function refusedFor(err, needs) {
    return el('p', { 'class': 'denied', text: err && err.extensions && err.extensions.code === 'permission_denied' ? 'Not allowed for this key (needs ' + needs + ')' : (err ? err.message : 'Could not be read') });
  }
  var DASHBOARD = 'query Dashboard { dashboard { livemode generatedAt payments { since perMinute { minute succeeded failed total } gateways { gatewayId gatewayType name attempts succeeded rate } volumeToday { currency count amount } } refunds { count byCurrency { currency count amount } } subscriptions { active pastDue mrr { currency count amount } } invoices { unpaid amountDue { currency count amount } } } }';
  var PAYMENTS = 'query Payments($page: Int, $search: String, $status: PaymentStatus) { payments(page: $page, pageSize: 20, search: $search, status: $status) { total page pageSize nodes { id amount currency status description customerId gatewayId createdAt } } }';
  var PAYMENT = 'query Payment($id: ID!) { payment(id: $id) { id status amount currency description createdAt customerId gatewayId failureCode failureMessage amountRefunded paymentMethodDetails { brand last4 } attempts { gateway outcome code latency } refunds(first: 50) { id amount currency status reason createdAt } customer { id email name } } }';
  var EVENTS = 'query Events { events(pageSize: 100) { nodes { id type createdAt data } } }';
  var LATEST_EVENT = 'query LatestEvent($id: ID) { events(objectId: $id, pageSize: 1) { nodes { id type createdAt data } } }';
  var OBJECT_EVENTS = 'query ObjectEvents($ids: [ID!]) { events(objectIds: $ids, pageSize: 100) { total nodes { id type createdAt } } }';
  var ENDPOINT = 'query Endpoint($id: ID!) { webhookEndpoint(id: $id) { id url status description events createdAt deliveries(pageSize: 50) { total nodes { id deliveryId eventId eventType attempt status statusCode latencyMs error createdAt } } } }';
  var RESEND = 'mutation Resend($id: ID!) { resendEvent(id: $id) { eventId deliveriesQueued } }';
  var LIVE = 'subscription Live($after: ID) { events(after: $after) { id type createdAt data } }';

  function el(tag, attrs, kids) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') node.textContent = attrs[k];
      else if (attrs[k] !== null && attrs[k] !== undefined) node.setAttribute(k, attrs[k]);
    });
    (kids || []).forEach(function (kid) { if (kid) node.appendChild(typeof kid === 'string' ? document.createTextNode(kid) : kid); });
    return node;
  }
  function fill(node, kids) { node.textContent = ''; kids.forEach(function (kid) { if (kid) node.appendChild(kid); }); }
  function money(amount, currency) {
    try {
      var f = new Intl.NumberFormat('en', { style: 'currency', currency: currency });
      return f.format(amount / Math.pow(10, f.resolvedOptions().maximumFractionDigits));
    } catch (e) { return amount + ' ' + currency; }
  }
  function count(n, one, many) { return n + ' ' + (n === 1 ? one : many); }
  function when(iso) { return new Date(iso).toLocaleString(); }
  function badge(status) { return el('span', { 'class': 'st ' + status, text: status }); }
  function link(id, label) { return el('a', { href: '#' + id, text: label || id }); }
  function table(head, rows) {
    return el('table', {}, [el('thead', {}, [el('tr', {}, head.map(function (h) { return el('th', { text: h }); }))]),
      el('tbody', {}, rows.map(function (r) { return el('tr', {}, r.map(function (c) { return el('td', {}, [typeof c === 'object' && c ? c : String(c === null || c === undefined ? '' : c)]); })); }))]);
  }
  function kv(pairs) {
    var dl = el('dl', { 'class': 'kv' });
    // A field with nothing in it (no failure, no description) is left out rather than shown empty.
    pairs.filter(function (p) { return p[1] !== '' && p[1] !== null && p[1] !== undefined; }).forEach(function (p) { dl.appendChild(el('dt', { text: p[0] })); dl.appendChild(el('dd', {}, [typeof p[1] === 'object' && p[1] ? p[1] : String(p[1] === null || p[1] === undefined ? '' : p[1])])); });
    return dl;
  }
  function debounce(name, ms, fn) { clearTimeout(timers[name]); timers[name] = setTimeout(fn, ms); }

  function gql(query, variables) {
    return fetch('/graphql', {
      method: 'POST', credentials: 'omit', cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'Authorization': 'Bearer ' + key },
      body: JSON.stringify({ query: query, variables: variables || {} })
    }).then(function (res) {
      return res.json().then(function (json) {
        if (res.status === 401) throw new Error((json.errors && json.errors[0] && json.errors[0].message) || 'The API key was refused');
        return json;
      });
    });
  }
  // The error of one field (a section without permission) out of a partial answer.
  function errorAt(json, path) {
    return (json.errors || []).filter(function (e) { return e.path && e.path.join('.') === path; })[0];
  }
  function denied(node, section, error) {
    fill(node, [el('p', { 'class': 'denied', text: 'Not allowed for this key (needs ' + NEEDS[section] + ')' + (error && error.extensions && error.extensions.code !== 'permission_denied' ? ': ' + error.message : '') })]);
  }

  // ---- overview
  function totals(rows, empty, one, many) {
    if (!rows.length) return el('p', { 'class': 'meta', text: empty });
    return el('div', {}, rows.map(function (r) { return el('p', { 'class': 'figure', text: money(r.amount, r.currency) }, [el('span', { 'class': 'meta', text: ' · ' + count(r.count, one, many) })]); }));
  }
  function drawChart(p) {
    var xs = [], ok = [], bad = [], all = [], sum = { s: 0, f: 0, t: 0 };
    p.perMinute.forEach(function (m) { xs.push(Date.parse(m.minute) / 1000); ok.push(m.succeeded); bad.push(m.failed); all.push(m.total); sum.s += m.succeeded; sum.f += m.failed; sum.t += m.total; });
    $('chart-legend').textContent = count(sum.t, 'payment', 'payments') + ' in the last hour: ' + sum.s + ' succeeded, ' + sum.f + ' failed';
    $('chart').setAttribute('data-total', String(sum.t));
    var data = [xs, ok, bad, all];
    if (chart) { chart.setData(data); return; }
    chart = new uPlot({
      width: Math.max(300, $('chart').clientWidth), height: 200,
      scales: { y: { range: function (u, min, max) { return [0, Math.max(4, max)]; } } },
      series: [{}, { label: 'succeeded', stroke: '#0a8f4f', width: 2 }, { label: 'failed', stroke: '#c0123c', width: 2 }, { label: 'all', stroke: '#8a93a3', dash: [4, 4], width: 1 }],
      axes: [{}, { size: 40 }]
    }, data, $('chart'));
  }
  function renderOverview(json) {
    var d = json.data && json.data.dashboard;
    if (!d) throw new Error((json.errors && json.errors[0] && json.errors[0].message) || 'The dashboard could not be read');
    $('test-mode').hidden = d.livemode;
    var sections = document.querySelectorAll('[data-section]');
    if (d.payments) {
      drawChart(d.payments);
      fill($('ov-gateways'), [d.payments.gateways.length
        ? table(['Gateway', 'Rate', 'Attempts'], d.payments.gateways.map(function (g) { return [g.name || g.gatewayType, Math.round(g.rate * 1000) / 10 + ' %', g.succeeded + ' / ' + g.attempts]; }))
        : el('p', { 'class': 'meta', text: 'No charges in the last hour' })]);
      fill($('ov-volume'), [totals(d.payments.volumeToday, 'No succeeded payments today', 'payment', 'payments')]);
    } else {
      for (var i = 0; i < sections.length; i++) {
        if (sections[i].getAttribute('data-section') === 'payments') denied(sections[i].lastElementChild.id === 'chart-legend' ? $('chart') : sections[i].lastElementChild, 'payments', errorAt(json, 'dashboard.payments'));
      }
      $('chart-legend').textContent = '';
    }
    if (d.refunds) fill($('ov-refunds'), [el('p', { 'class': 'figure', text: String(d.refunds.count) }), totals(d.refunds.byCurrency, 'No refunds today', 'refund', 'refunds')]);
    else denied($('ov-refunds'), 'refunds', errorAt(json, 'dashboard.refunds'));
    if (d.subscriptions) {
      fill($('ov-subscriptions'), [kv([['Active', d.subscriptions.active], ['Past due', d.subscriptions.pastDue]]),
        el('p', { 'class': 'meta', text: 'Monthly recurring revenue' }), totals(d.subscriptions.mrr, 'No active subscriptions', 'subscription', 'subscriptions')]);
    } else denied($('ov-subscriptions'), 'subscriptions', errorAt(json, 'dashboard.subscriptions'));
    if (d.invoices) fill($('ov-invoices'), [el('p', { 'class': 'figure', text: String(d.invoices.unpaid) }), totals(d.invoices.amountDue, 'Nothing due', 'invoice', 'invoices')]);
    else denied($('ov-invoices'), 'invoices', errorAt(json, 'dashboard.invoices'));
  }
  function loadOverview() { return gql(DASHBOARD).then(renderOverview).catch(showError); }

  // ---- payments table
  function loadPayments() {
    var mine = generation;
    var vars = { page: list.page };
    if (list.search) vars.search = list.search;
    if (list.status) vars.status = list.status;
    return gql(PAYMENTS, vars).then(function (json) {
      if (mine !== generation) return;
      var page = json.data && json.data.payments;
      if (!page) {
        var err = json.errors && json.errors[0];
        return fill($('payments-table'), [el('p', { 'class': 'denied', text: err && err.extensions && err.extensions.code !== 'permission_denied' ? err.message : 'Not allowed for this key (needs payments:read)' })]);
      }
      list.pages = Math.max(1, Math.ceil(page.total / page.pageSize));
      $('page-info').textContent = 'Page ' + page.page + ' of ' + list.pages + ' · ' + count(page.total, 'payment', 'payments');
      $('prev-page').disabled = page.page <= 1;
      $('next-page').disabled = page.page >= list.pages;
      fill($('payments-table'), [page.nodes.length ? table(['Payment', 'Amount', 'Status', 'Description', 'Created'], page.nodes.map(function (p) {
        return [link(p.id), money(p.amount, p.currency), badge(p.status), el('span', { text: p.description || '' }), when(p.createdAt)];
      })) : el('p', { 'class': 'meta', text: 'No payments match' })]);
    }).catch(showError);
  }

  // ---- the other resources: one table each, chosen in a select
  var RESOURCES = {
    customers: { needs: 'customers:read', search: true, statuses: [], fields: 'id email name country createdAt',
      columns: ['Customer', 'E-mail', 'Name', 'Country', 'Created'], row: function (o) { return [o.id, o.email, o.name, o.country, when(o.createdAt)]; } },
    subscriptions: { needs: 'subscriptions:read', statuses: ['active', 'past_due', 'paused', 'canceled'], fields: 'id customerId status quantity currentPeriodEnd plan { unitAmount currency interval } createdAt',
      columns: ['Subscription', 'Customer', 'Status', 'Plan', 'Period ends'], row: function (o) { return [o.id, o.customerId, badge(o.status), o.plan ? money(o.plan.unitAmount * o.quantity, o.plan.currency) + ' / ' + o.plan.interval : '', when(o.currentPeriodEnd)]; } },
    invoices: { needs: 'invoices:read', statuses: ['draft', 'sent', 'paid', 'void'], fields: 'id number customerId status currency total amountDue hostedUrl createdAt',
      columns: ['Invoice', 'Customer', 'Status', 'Total', 'Due', 'Page', 'PDF'], row: function (o) { return [o.number || o.id, o.customerId, badge(o.status), money(o.total, o.currency), money(o.amountDue, o.currency), o.hostedUrl ? el('a', { href: new URL(o.hostedUrl).pathname, target: '_blank', rel: 'noopener', text: 'open' }) : '', pdfButton(o)]; } },
    checkoutSessions: { needs: 'checkout_sessions:read', statuses: ['open', 'complete', 'expired'], fields: 'id mode status amount currency customerEmail paymentId createdAt',
      columns: ['Session', 'Mode', 'Status', 'Amount', 'Payment', 'Created'], row: function (o) { return [o.id, o.mode, badge(o.status), o.amount !== null && o.currency ? money(o.amount, o.currency) : '', o.paymentId ? link(o.paymentId) : '', when(o.createdAt)]; } },
    paymentLinks: { needs: 'payment_links:read', search: true, statuses: ['active', 'inactive'], fields: 'id name slug status amount currency createdAt',
      columns: ['Link', 'Name', 'Status', 'Amount', 'Created'], row: function (o) { return [o.slug, o.name, badge(o.status), o.amount !== null && o.currency ? money(o.amount, o.currency) : '', when(o.createdAt)]; } },
    webhookEndpoints: { needs: 'webhook_endpoints:read', statuses: ['enabled', 'disabled'], fields: 'id url status description createdAt deliveries(pageSize: 1) { total nodes { status statusCode createdAt } }',
      columns: ['Endpoint', 'URL', 'Status', 'Description', 'Deliveries', 'Last attempt', 'Created'], row: function (o) {
        var d = o.deliveries, last = d && d.nodes[0];
        return [link(o.id), o.url, badge(o.status), o.description || '', d ? link(o.id, d.total + (d.total === 1 ? ' attempt' : ' attempts')) : '', last ? el('span', {}, [badge(last.status), ' ' + (last.statusCode || '—') + ' · ' + when(last.createdAt)]) : '', when(o.createdAt)];
      } }
  };

  // An invoice's PDF: GET /v1/invoices/{id}/pdf needs the key in the Authorization header, so it
  // is fetched here and handed to the browser as a blob URL (the key never goes into a URL).
  function pdfButton(o) {
    var b = el('button', { 'class': 'small ghost', type: 'button', text: 'PDF', 'data-invoice': o.id });
    b.addEventListener('click', function () {
      b.disabled = true;
      fetch('/v1/invoices/' + encodeURIComponent(o.id) + '/pdf', { credentials: 'omit', cache: 'no-store', headers: { 'Authorization': 'Bearer ' + key } }).then(function (res) {
        if (!res.ok) return res.json().then(function (json) { throw new Error((json.error && json.error.message) || 'The PDF could not be read'); });
        return res.blob();
      }).then(function (blob) {
        var url = URL.createObjectURL(blob);
        var a = el('a', { href: url, download: (o.number || o.id) + '.pdf', hidden: 'hidden' });
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
        b.disabled = false;
      }).catch(function (err) { b.disabled = false; b.replaceWith(el('span', { 'class': 'denied', text: err.message || String(err) })); });
    });
    return b;
  }
  var browse = { kind: 'customers', page: 1, pages: 1, search: '', status: '' };
  function setBrowseKind() {
    var r = RESOURCES[browse.kind];
    $('browse-search').hidden = !r.search;
    fill($('browse-status'), [el('option', { value: '', text: 'Any status' })].concat(r.statuses.map(function (st) { return el('option', { value: st, text: st }); })));
    $('browse-status').hidden = !r.statuses.length;
    browse.page = 1; browse.search = ''; browse.status = ''; $('browse-search').value = '';
    loadBrowse();
  }
  function loadBrowse() {
    var r = RESOURCES[browse.kind], kind = browse.kind, mine = generation;
    var args = ['page: ' + browse.page, 'pageSize: 20'], vars = {}, decl = [];
    if (r.search && browse.search) { args.push('search: $search'); decl.push('$search: String'); vars.search = browse.search; }
    if (browse.status) { args.push('status: ' + browse.status); }
    var query = 'query Browse' + (decl.length ? '(' + decl.join(', ') + ')' : '') + ' { list: ' + kind + '(' + args.join(', ') + ') { total page pageSize nodes { ' + r.fields + ' } } }';
    return gql(query, vars).then(function (json) {
      if (mine !== generation || kind !== browse.kind) return;
      var page = json.data && json.data.list;
      if (!page) {
        return fill($('browse-table'), [refusedFor(json.errors && json.errors[0], r.needs)]);
      }
      browse.pages = Math.max(1, Math.ceil(page.total / page.pageSize));
      $('browse-info').textContent = 'Page ' + page.page + ' of ' + browse.pages + ' · ' + page.total + ' in all';
      $('browse-prev').disabled = page.page <= 1;
      $('browse-next').disabled = page.page >= browse.pages;
      fill($('browse-table'), [page.nodes.length ? table(r.columns, page.nodes.map(r.row)) : el('p', { 'class': 'meta', text: 'None' })]);
    }).catch(showError);
  }

  // ---- detail (the object a link names, by its id in the fragment)
  function openDetail() {
    var id = decodeURIComponent(location.hash.slice(1));
    var box = $('detail');
    if (!id || !key) { box.hidden = true; return; }
    box.hidden = false;
    var close = el('button', { 'class': 'small ghost', type: 'button', text: 'Close' });
    close.addEventListener('click', function () { history.replaceState(null, '', location.pathname); box.hidden = true; });
    var head = el('div', { 'class': 'bar' }, [el('h2', { 'class': 'title', text: id }), el('span', { 'class': 'grow' }), close]);
    if (/^we_/.test(id)) return openEndpoint(id, box, head);
    if (!/^pay_/.test(id)) {
      // Another object: as its latest event shows it (from the feed, or asked for by its id).
      var show = function (ev) {
        var obj = ev ? ev.data.object : null;
        if (obj && obj.paymentId) { location.hash = '#' + obj.paymentId; return; }
        fill(box, [head, obj ? kv(Object.keys(obj).filter(function (k) { return typeof obj[k] !== 'object' || obj[k] === null; }).map(function (k) { return [k, obj[k]]; })) : el('p', { 'class': 'meta', text: 'No events of this object' })]);
      };
      var seenIn = feed.filter(function (e) { return e.data && e.data.object && e.data.object.id === id; })[0];
      if (seenIn) return show(seenIn);
      fill(box, [head, el('p', { 'class': 'meta', text: 'Loading…' })]);
      return gql(LATEST_EVENT, { id: id }).then(function (json) {
        var page = json.data && json.data.events;
        if (!page) return fill(box, [head, refusedFor(json.errors && json.errors[0], 'events:read')]);
        show(page.nodes[0]);
      }).catch(showError);
    }
    fill(box, [head, el('p', { 'class': 'meta', text: 'Loading…' })]);
    box.scrollIntoView({ block: 'start' });
    gql(PAYMENT, { id: id }).then(function (json) {
      var p = json.data && json.data.payment;
      if (!p) return fill(box, [head, el('p', { 'class': 'denied', text: (json.errors && json.errors[0].message) || 'No such payment' })]);
      // The events of the payment and of every refund listed, in one list.
      var ids = [p.id].concat((p.refunds || []).map(function (r) { return r.id; }));
      return gql(OBJECT_EVENTS, { ids: ids }).then(function (answer) { showPayment(p, answer.data && answer.data.events); });
    }).catch(showError);
    function showPayment(p, page) {
      var events = page ? page.nodes : [];
      fill(box, [head,
        kv([['Status', badge(p.status)], ['Amount', money(p.amount, p.currency)], ['Refunded', money(p.amountRefunded, p.currency)], ['Description', p.description],
          ['Card', p.paymentMethodDetails ? p.paymentMethodDetails.brand + ' ····' + p.paymentMethodDetails.last4 : ''],
          ['Failure', p.failureCode ? p.failureCode + ': ' + p.failureMessage : ''], ['Created', when(p.createdAt)]]),
        el('h3', { text: 'Attempts' }),
        p.attempts.length ? table(['Gateway', 'Outcome', 'Code', 'Latency'], p.attempts.map(function (a) { return [a.gateway, badge(a.outcome), a.code || '', a.latency + ' ms']; })) : el('p', { 'class': 'meta', text: 'No gateway attempts' }),
        el('h3', { text: 'Refunds' }),
        p.refunds === null ? el('p', { 'class': 'denied', text: 'Not allowed for this key (needs refunds:read)' })
          : p.refunds.length ? table(['Refund', 'Amount', 'Status', 'Reason', 'Created'], p.refunds.map(function (r) { return [r.id, money(r.amount, r.currency), badge(r.status), r.reason || '', when(r.createdAt)]; })) : el('p', { 'class': 'meta', text: 'None' }),
        el('h3', { text: 'Customer' }),
        p.customer ? kv([['Id', p.customer.id], ['E-mail', p.customer.email], ['Name', p.customer.name]]) : el('p', { 'class': 'meta', text: p.customerId ? p.customerId + ' (not readable with this key)' : 'None' }),
        el('h3', { text: 'Events' }),
        page ? (events.length ? table(['Event', 'Type', 'Created'], events.map(function (e) { return [e.id, e.type, when(e.createdAt)]; })) : el('p', { 'class': 'meta', text: 'None' }))
          : el('p', { 'class': 'denied', text: 'Not allowed for this key (needs events:read)' }),
        page && page.total > page.nodes.length ? el('p', { 'class': 'meta', text: 'The latest ' + page.nodes.length + ' of the ' + page.total + ' events of the payment and its refunds' }) : null]);
    }
  }

  // A webhook endpoint and its delivery log (newest attempt first), each with a resend button.
  function openEndpoint(id, box, head) {
    var mine = location.hash;
    fill(box, [head, el('p', { 'class': 'meta', text: 'Loading…' })]);
    box.scrollIntoView({ block: 'start' });
    var note = el('div', { 'class': 'meta', id: 'resend-status', role: 'status' });
    function load() {
      return gql(ENDPOINT, { id: id }).then(function (json) {
        if (location.hash !== mine) return null;
        var w = json.data && json.data.webhookEndpoint;
        if (!w) { fill(box, [head, refusedFor(json.errors && json.errors[0], 'webhook_endpoints:read')]); return null; }
        var refresh = el('button', { 'class': 'small ghost', type: 'button', text: 'Refresh' });
        refresh.addEventListener('click', load);
        var log = w.deliveries;
        fill(box, [head,
          kv([['URL', w.url], ['Status', badge(w.status)], ['Events', w.events.join(', ')], ['Description', w.description], ['Created', when(w.createdAt)]]),
          el('div', { 'class': 'bar' }, [el('h3', { text: 'Delivery log' }), el('span', { 'class': 'grow' }), refresh]), note,
          !log ? refusedFor(json.errors && json.errors[0], 'webhook_endpoints:read')
            : log.nodes.length ? el('div', { id: 'delivery-log' }, [table(['Event', 'Type', 'Attempt', 'Status', 'Response', 'Latency', 'Time', ''], log.nodes.map(function (a) {
              return [a.eventId, a.eventType, a.attempt, badge(a.status), a.statusCode === null ? (a.error || '—') : String(a.statusCode), a.latencyMs + ' ms', when(a.createdAt), a.eventType === 'ping' ? el('span', { 'class': 'meta', text: 'test ping' }) : resendButton(a, load)];
            })), log.total > log.nodes.length ? el('p', { 'class': 'meta', text: 'The latest ' + log.nodes.length + ' of ' + log.total + ' attempts' }) : null])
              : el('p', { 'class': 'meta', text: 'No delivery attempts yet' })]);
        box.setAttribute('data-attempts', log ? String(log.total) : '');
        return log ? log.total : null;
      }).catch(showError);
    }
    function resendButton(a, reload) {
      var b = el('button', { 'class': 'small ghost', type: 'button', text: 'Resend', title: 'Deliver ' + a.eventId + ' again to every endpoint subscribed to ' + a.eventType });
      b.addEventListener('click', function () {
        b.disabled = true;
        var before = Number(box.getAttribute('data-attempts'));
        gql(RESEND, { id: a.eventId }).then(function (json) {
          var r = json.data && json.data.resendEvent;
          if (!r) { b.disabled = false; return fill(note, [refusedFor(json.errors && json.errors[0], 'webhook_endpoints:write')]); }
          note.textContent = 'Resent ' + r.eventId + ': ' + r.deliveriesQueued + (r.deliveriesQueued === 1 ? ' delivery' : ' deliveries') + ' queued';
          // The new attempt is logged once the delivery worker has sent it: look again for a while.
          var tries = 0;
          (function poll() {
            setTimeout(function () {
              if (location.hash !== mine) return;
              reload().then(function (total) { if (total !== null && total !== undefined && total <= before && ++tries < 15) poll(); });
            }, 1000);
          })();
        }).catch(function (err) { b.disabled = false; note.textContent = err.message || String(err); });
      });
      return b;
    }
    load();
  }

  // ---- live feed
  function objectOf(e) { return (e.data && e.data.object) || {}; }
  function renderFeed() {
    var type = $('feed-type').value;
    fill($('feed'), feed.filter(function (e) { return !type || e.type.indexOf(type) === 0; }).slice(0, 100).map(function (e) {
      var o = objectOf(e);
      return el('li', { 'data-type': e.type }, [el('span', {}, [el('strong', { text: e.type }), ' ', o.id ? link(o.id) : '']), el('time', { datetime: e.createdAt, text: new Date(e.createdAt).toLocaleTimeString() })]);
    }));
  }
  function addEvent(e, live) {
    if (seen[e.id]) return;
    seen[e.id] = true;
    feed.push(e);
    feed.sort(function (a, b) { return a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0; });
    if (feed.length > 300) feed.length = 300;
    renderFeed();
    if (live && /^(payment|refund|subscription|invoice)\./.test(e.type)) debounce('overview', 200, loadOverview);
    if (live && /^(payment|refund)\./.test(e.type)) debounce('payments', 300, loadPayments);
  }
  function setConn(text, cls) { var c = $('conn'); c.hidden = false; c.textContent = text; c.className = 'conn ' + cls; }
  function connect() {
    var url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/graphql';
    client = graphqlWs.createClient({
      url: url,
      connectionParams: function () { return { authorization: 'Bearer ' + key }; },
      keepAlive: 10000,
      retryAttempts: Infinity,
      // A refused key or query is final; anything else (the service restarting) is retried.
      shouldRetry: function (e) { var code = e && e.code; return !(code === 4400 || code === 4401 || code === 4403 || code === 4429); },
      retryWait: function (retries) { return new Promise(function (resolve) { setTimeout(resolve, Math.min(3000, 250 * Math.pow(2, retries))); }); },
      on: {
        connected: function () {
          setConn('Live', 'live');
          // The feed resumes by itself (subscribeLive); the figures are read again.
          if (dropped) { dropped = false; loadOverview(); loadPayments(); }
        },
        closed: function () { if (key) { dropped = true; setConn('Reconnecting…', 'down'); } }
      }
    });
    subscribeLive();
  }
  function subscribeLive() {
    // graphql-ws sends this same payload again each time it reconnects: its after, moved on
    // with every event, makes the service replay what was written while the socket was down.
    var live = { query: LIVE, variables: { after: cursor } };
    client.subscribe(live, {
      next: function (msg) {
        if (msg.data && msg.data.events) {
          cursor = live.variables.after = msg.data.events.id;
          addEvent(msg.data.events, true);
        } else if (msg.errors) {
          var e = msg.errors[0] && msg.errors[0].extensions;
          // The event to resume after is not there (another database): start live from now.
          if (e && e.code === 'invalid_parameter' && e.param === 'after') { cursor = null; subscribeLive(); return; }
          fill($('feed'), [el('li', { 'class': 'denied', text: 'Not allowed for this key (needs events:read)' })]);
        }
      },
      error: function (err) { setConn('Live updates stopped', 'down'); fill($('feed'), [el('li', { 'class': 'denied', text: (err && (err.reason || err.message)) || 'The event stream was refused' })]); },
      complete: function () {}
    });
  }
  function loadRecentEvents() {
    return gql(EVENTS).then(function (json) {
      var page = json.data && json.data.events;
      if (!page) return;
      page.nodes.slice(0, 50).forEach(function (e) { addEvent(e, false); });
      // Newest first: the live stream starts after the first.
      if (page.nodes.length && !cursor) cursor = page.nodes[0].id;
    }).catch(showError);
  }

  // ---- sign-in
  function showError(err) { var box = key ? null : $('sign-in-error'); if (box) box.textContent = err.message || String(err); else if (window.console) console.warn(err); }
  function signIn(candidate) {
    key = candidate;
    $('sign-in-error').textContent = '';
    return gql(DASHBOARD).then(function (json) {
      renderOverview(json);
      sessionStorage.setItem(SLOT, key);
      $('api-key').value = '';
      $('sign-in').hidden = true;
      $('app').hidden = false;
      $('sign-out').hidden = false;
      generation++;
      if (chart) chart.setSize({ width: Math.max(300, $('chart').clientWidth), height: 200 });
      loadPayments();
      setBrowseKind();
      openDetail();
      // Listed first, so the stream starts right after the newest event listed: none falls between.
      loadRecentEvents().then(connect);
    }).catch(function (err) {
      key = null;
      sessionStorage.removeItem(SLOT);
      $('sign-in-error').textContent = err.message || String(err);
    });
  }
  function signOut() {
    sessionStorage.removeItem(SLOT);
    key = null;
    if (client) client.dispose();
    client = null;
    location.hash = '';
    location.reload();
  }

  $('sign-in-button').addEventListener('click', function () {
    var value = $('api-key').value.trim();
    if (!/^\S+$/.test(value)) { $('sign-in-error').textContent = 'Paste an API key (sk_test_… or sk_live_…)'; return; }
    signIn(value);
  });
  $('sign-out').addEventListener('click', signOut);
  $('payment-search').addEventListener('input', function () { list.search = this.value.trim(); list.page = 1; debounce('search', 250, loadPayments); });
  $('payment-status').addEventListener('change', function () { list.status = this.value; list.page = 1; loadPayments(); });
  $('prev-page').addEventListener('click', function () { if (list.page > 1) { list.page--; loadPayments(); } });
  $('next-page').addEventListener('click', function () { if (list.page < list.pages) { list.page++; loadPayments(); } });
  $('feed-type').addEventListener('change', renderFeed);
  $('browse-kind').addEventListener('change', function () { browse.kind = this.value; setBrowseKind(); });
  $('browse-search').addEventListener('input', function () { browse.search = this.value.trim(); browse.page = 1; debounce('browse', 250, loadBrowse); });
  $('browse-status').addEventListener('change', function () { browse.status = this.value; browse.page = 1; loadBrowse(); });
  $('browse-prev').addEventListener('click', function () { if (browse.page > 1) { browse.page--; loadBrowse(); } });
  $('browse-next').addEventListener('click', function () { if (browse.page < browse.pages) { browse.page++; loadBrowse(); } });
  window.addEventListener('hashchange', openDetail);
  window.addEventListener('resize', function () { if (chart) debounce('resize', 150, function () { chart.setSize({ width: Math.max(300, $('chart').clientWidth), height: 200 }); }); });
  var stored = sessionStorage.getItem(SLOT);
  if (stored) signIn(stored);
})();
`;

export const DASHBOARD_SCRIPT = pageScript(SOURCE);
