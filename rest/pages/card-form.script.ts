import { pageScript } from './page-layout';

/**
 * The card form's script, sent inline and allowed by its hash (the page's policy runs nothing
 * else). It checks what it can before sending (Luhn, expiry in the future, CVC length, e-mail),
 * posts the card as JSON straight to the form's public pay route on this origin, and shows the
 * answer: a decline in the alert region with the form kept, success (or a redirect to the
 * merchant's success URL), or a payment still being processed.
 *
 * The card lives only in the inputs and in the one request body: never in a URL, a cookie, the
 * page's storage or the console. Each attempt has its own Idempotency-Key; an attempt whose answer
 * never arrived (network error, 5xx, key still in use) is sent again under the same key when the
 * customer repeats it unchanged, so a retry is never a second charge.
 *
 * Its messages are English unless the form carries `data-messages` (JSON, escaped as any attribute
 * value: CardFormMessages): a page in another language (the hosted invoice page) passes its own.
 * `{name}` in a message is filled in (a server's reason, a request id, an HTTP status).
 *
 * Plain ES2017 in a string: the page needs no build step and no asset route. Keep `</` out of it.
 */
const SOURCE = String.raw`(function () {
  'use strict';
  var form = document.getElementById('card-form');
  if (!form) return;
  var payUrl = form.getAttribute('data-pay-url');
  var viewUrl = form.getAttribute('data-view-url');
  var setup = form.getAttribute('data-mode') === 'setup';
  var link = form.getAttribute('data-kind') === 'link';
  var statusBox = document.getElementById('pay-status');
  var button = document.getElementById('pay-button');
  var buttonLabel = button.textContent;
  var done = document.getElementById('pay-done');
  var doneTitle = document.getElementById('pay-done-title');
  var doneText = document.getElementById('pay-done-text');
  var fields = {
    number: document.getElementById('card-number'),
    expiry: document.getElementById('card-expiry'),
    cvc: document.getElementById('card-cvc'),
    name: document.getElementById('payer-name'),
    email: document.getElementById('payer-email')
  };
  var order = ['number', 'expiry', 'cvc', 'name', 'email'];
  var PARAMS = { 'card.number': 'number', 'card.expMonth': 'expiry', 'card.expYear': 'expiry', 'card.cvc': 'cvc', name: 'name', email: 'email' };
  var M = {
    card_declined: 'Your card was declined. Try another card, or contact your bank.',
    insufficient_funds: 'Your card was declined: insufficient funds. Try another card.',
    expired_card: 'Your card was declined: the card has expired. Try another card.',
    incorrect_cvc: 'Your card was declined: the CVC is incorrect. Check it and try again.',
    authentication_failed: 'Your card was declined: the payment was not confirmed with your bank (3-D Secure). Try again, or use another card.',
    authentication_expired: 'Your card was declined: the confirmation with your bank (3-D Secure) was not finished in time. Try again.',
    declinedBecause: 'Your card was declined ({reason}). Try another card, or contact your bank.',
    notProcessed: 'The payment did not go through: {reason} You were not charged; try again.',
    notProcessedReason: 'it could not be processed.',
    numberMissing: 'Enter your card number.',
    numberInvalid: 'This card number is not valid. Check it and try again.',
    expiryMissing: 'Enter the expiry date (MM/YY).',
    expiryFormat: 'Enter the expiry date as MM/YY, for example 04/29.',
    expiryPast: 'This expiry date is in the past.',
    cvcAmex: 'Enter the 4-digit CVC from the front of the card.',
    cvc: 'Enter the 3- or 4-digit CVC from the back of the card.',
    email: 'Enter a valid e-mail address, or leave it empty.',
    processing: 'Processing\u2026',
    saving: 'Saving\u2026',
    unreachable: 'We could not reach the payment server. Check your connection and try again: repeating the same attempt never charges twice.',
    serverError: 'Something went wrong on our side{request}. Try again: repeating the same attempt never charges twice.',
    requestRef: ' (request {id})',
    inUse: 'A payment of this checkout is already being processed. Waiting for its result\u2026',
    invalidState: '{message} Reload the page to see where it stands.',
    invalidStateDefault: 'This checkout can no longer be paid.',
    linkInactive: 'This payment link is inactive: it no longer takes payments.',
    tooManyAttempts: '{message} Nothing was charged.',
    tooManyAttemptsDefault: 'Too many failed payment attempts.',
    customerExists: 'This e-mail address already belongs to a customer account with the merchant, so your card was not saved. Ask the merchant for a link to your account, or use another e-mail address.',
    rateLimited: 'Too many attempts from your connection. Wait a minute, then try again.',
    notSent: 'The payment could not be sent (HTTP {status}).',
    redirecting: 'Taking you back to the merchant\u2026 ',
    continueLink: 'Continue',
    processingOnce: 'Your payment is being processed. Do not pay again: the merchant will confirm it once it is settled.',
    processingWait: 'Your payment is being processed. Waiting for its result\u2026',
    expired: 'This checkout has expired. Reload the page to see where it stands.',
    noResultYet: 'We have not received the result of your payment yet. You can try again: while the first payment is still being processed you will be told so, and you will not be charged twice.'
  };
  // A page's own words (data-messages): each replaces the English one of its name.
  try {
    var given = JSON.parse(form.getAttribute('data-messages') || 'null');
    if (given && typeof given === 'object') {
      Object.keys(given).forEach(function (k) { if (typeof given[k] === 'string') M[k] = given[k]; });
    }
  } catch (e) { /* unreadable: English */ }
  // A server's text for a field (its 400), when the page has its own word for it.
  var FIELD_WORDS = M.fieldWords === 'page' ? { number: M.numberInvalid, expiry: M.expiryFormat, cvc: M.cvc, email: M.email } : {};
  var DECLINES = {
    card_declined: M.card_declined, insufficient_funds: M.insufficient_funds, expired_card: M.expired_card, incorrect_cvc: M.incorrect_cvc,
    authentication_failed: M.authentication_failed, authentication_expired: M.authentication_expired
  };
  function fill(text, values) {
    return String(text).replace(/\{(\w+)\}/g, function (all, k) { return values[k] === undefined || values[k] === null ? '' : String(values[k]); });
  }
  var NOT_DECLINES = { processing_error: 1, gateway_error: 1, gateway_unavailable: 1, timeout: 1 };
  // The attempt whose answer has not arrived: the same body is sent again under the same key.
  var pending = null;
  var busy = false;

  function digits(v) { return String(v).replace(/\D/g, ''); }
  function isAmex(d) { return /^3[47]/.test(d); }
  function luhn(d) {
    var sum = 0, dbl = false;
    for (var i = d.length - 1; i >= 0; i--) {
      var n = d.charCodeAt(i) - 48;
      if (dbl) { n *= 2; if (n > 9) n -= 9; }
      sum += n;
      dbl = !dbl;
    }
    return sum % 10 === 0;
  }
  function groupNumber(d) {
    if (isAmex(d)) return [d.slice(0, 4), d.slice(4, 10), d.slice(10, 15)].filter(Boolean).join(' ');
    return d.replace(/(\d{4})(?=\d)/g, '$1 ');
  }
  function expiryOf(v) {
    var m = /^\s*(\d{1,2})\s*\/\s*(\d{2}|\d{4})\s*$/.exec(v);
    if (!m) return null;
    var month = Number(m[1]), year = Number(m[2]);
    if (year < 100) year += 2000;
    if (month < 1 || month > 12) return null;
    return { month: month, year: year };
  }
  function newKey() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return 'pay_' + Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join('');
  }

  // Typing aids: the number in groups of four (Amex 4-6-5), the expiry as MM/YY, the CVC digits only.
  fields.number.addEventListener('input', function () {
    var el = fields.number;
    var caret = el.selectionStart === null ? el.value.length : el.selectionStart;
    var before = digits(el.value.slice(0, caret)).length;
    var formatted = groupNumber(digits(el.value).slice(0, 19));
    if (formatted === el.value) return;
    el.value = formatted;
    var pos = 0, seen = 0;
    while (pos < formatted.length && seen < before) { if (formatted.charAt(pos) !== ' ') seen++; pos++; }
    if (document.activeElement === el) el.setSelectionRange(pos, pos);
  });
  fields.expiry.addEventListener('input', function (event) {
    var el = fields.expiry;
    var d = digits(el.value).slice(0, 6);
    if (/^\d\s*\//.test(el.value)) d = '0' + d;
    else if (d.length === 1 && d > '1' && event.inputType !== 'deleteContentBackward') d = '0' + d;
    var v = d.length > 2 ? d.slice(0, 2) + '/' + d.slice(2) : d;
    if (v !== el.value) el.value = v;
  });
  fields.cvc.addEventListener('input', function () {
    var v = digits(fields.cvc.value).slice(0, 4);
    if (v !== fields.cvc.value) fields.cvc.value = v;
  });
  order.forEach(function (k) {
    if (fields[k]) fields[k].addEventListener('input', function () { fieldError(k, ''); });
  });

  function fieldError(k, message) {
    var el = fields[k];
    if (!el) return;
    document.getElementById(el.id + '-error').textContent = message;
    if (message) el.setAttribute('aria-invalid', 'true');
    else el.removeAttribute('aria-invalid');
  }
  function say(text, info) {
    statusBox.className = info ? 'status info' : 'status';
    statusBox.textContent = text;
  }
  var buttonHadFocus = false;
  function setBusy(on) {
    // A disabled button loses the focus: give it back once the answer is in, for keyboard users.
    if (on) buttonHadFocus = document.activeElement === button;
    busy = on;
    button.disabled = on;
    button.textContent = on ? (setup ? M.saving : M.processing) : buttonLabel;
    form.setAttribute('aria-busy', on ? 'true' : 'false');
    if (!on && buttonHadFocus && (!document.activeElement || document.activeElement === document.body)) button.focus();
  }
  function lock() {
    busy = true;
    button.disabled = true;
    button.textContent = buttonLabel;
    form.setAttribute('aria-busy', 'false');
  }

  function check() {
    var errors = {};
    var number = digits(fields.number.value);
    if (!number) errors.number = M.numberMissing;
    else if (number.length < 12 || number.length > 19 || !luhn(number)) errors.number = M.numberInvalid;
    var expiry = fields.expiry.value.trim();
    var exp = expiryOf(expiry);
    var now = new Date();
    if (!expiry) errors.expiry = M.expiryMissing;
    else if (!exp) errors.expiry = M.expiryFormat;
    else if (exp.year < now.getFullYear() || (exp.year === now.getFullYear() && exp.month < now.getMonth() + 1)) errors.expiry = M.expiryPast;
    var cvc = fields.cvc.value.trim();
    if (isAmex(number) ? !/^\d{4}$/.test(cvc) : !/^\d{3,4}$/.test(cvc)) {
      errors.cvc = isAmex(number) ? M.cvcAmex : M.cvc;
    }
    if (fields.email) {
      var email = fields.email.value.trim();
      if (email && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) errors.email = M.email;
    }
    return errors;
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    if (busy) return;
    var errors = check();
    var first = null;
    order.forEach(function (k) {
      fieldError(k, errors[k] || '');
      if (errors[k] && !first) first = k;
    });
    if (first) {
      say(errors[first]);
      fields[first].focus();
      return;
    }
    say('');
    var exp = expiryOf(fields.expiry.value);
    var body = { card: { number: digits(fields.number.value), expMonth: exp.month, expYear: exp.year, cvc: fields.cvc.value.trim() } };
    if (fields.name && fields.name.value.trim()) body.name = fields.name.value.trim();
    if (fields.email && fields.email.value.trim()) body.email = fields.email.value.trim();
    send(JSON.stringify(body), 0);
  });

  function send(payload, tries) {
    setBusy(true);
    if (!pending || pending.payload !== payload) pending = { key: newKey(), payload: payload };
    var attempt = pending;
    fetch(payUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': attempt.key },
      body: payload,
      credentials: 'omit',
      cache: 'no-store',
      redirect: 'error'
    }).then(function (res) {
      return res.json().then(function (json) { return { status: res.status, json: json }; }, function () { return { status: res.status, json: null }; });
    }).then(function (answer) {
      settle(answer.status, answer.json || {}, payload, tries);
    }, function () {
      setBusy(false);
      say(M.unreachable);
    });
  }

  function settle(status, json, payload, tries) {
    var error = json.error || {};
    if (status === 200 && json.data) {
      pending = null;
      return result(json.data);
    }
    if (status === 409 && error.code === 'idempotency_key_in_use' && tries < 15) {
      // The same attempt is still being worked on: ask again under its key for its answer.
      return setTimeout(function () { send(payload, tries + 1); }, 1000);
    }
    setBusy(false);
    if (status >= 500 || error.code === 'idempotency_key_in_use') {
      say(fill(M.serverError, { request: error.requestId ? fill(M.requestRef, { id: error.requestId }) : '' }));
      return;
    }
    pending = null;
    var field = PARAMS[error.param];
    if (status === 400 && field && fields[field]) {
      var text = FIELD_WORDS[field] || error.message;
      fieldError(field, text);
      say(text);
      fields[field].focus();
    } else if (error.code === 'checkout_session_in_use') {
      say(M.inUse, true);
      poll(0);
    } else if (error.code === 'invalid_state') {
      say(fill(M.invalidState, { message: error.message || M.invalidStateDefault }));
      lock();
    } else if (error.code === 'payment_link_inactive') {
      say(M.linkInactive);
      lock();
    } else if (error.code === 'too_many_attempts') {
      // Card testing is capped: no further attempt from this page (the server says until when).
      say(fill(M.tooManyAttempts, { message: (error.message || M.tooManyAttemptsDefault).replace(/\.?$/, '.') }));
      lock();
    } else if (error.code === 'customer_exists') {
      var exists = M.customerExists;
      if (fields.email) fieldError('email', exists);
      say(exists);
      if (fields.email) fields.email.focus();
    } else if (status === 429) {
      say(M.rateLimited);
    } else {
      say(error.message || fill(M.notSent, { status: status }));
    }
  }

  function result(data) {
    if (data.status === 'succeeded') return succeed(data.redirectUrl);
    if (data.status === 'processing') return processing();
    // 3-D Secure: the card issuer's challenge; it brings the payer back when answered.
    if (data.status === 'requires_action' && data.redirectUrl && /^https?:\/\//i.test(data.redirectUrl)) return window.location.assign(data.redirectUrl);
    setBusy(false);
    say(declineText(data.failureCode, data.failureMessage));
  }

  function declineText(code, message) {
    if (DECLINES[code]) return DECLINES[code];
    if (NOT_DECLINES[code]) return fill(M.notProcessed, { reason: message || M.notProcessedReason });
    return message ? fill(M.declinedBecause, { reason: String(message).replace(/\.$/, '') }) : M.card_declined;
  }

  function succeed(redirectUrl) {
    say('');
    form.hidden = true;
    // What only makes sense before paying (the test cards, "Cancel and return") goes with the form.
    Array.prototype.forEach.call(document.querySelectorAll('[data-until-done]'), function (el) { el.hidden = true; });
    done.hidden = false;
    if (redirectUrl && /^https?:\/\//i.test(redirectUrl)) {
      doneText.textContent = M.redirecting;
      var a = document.createElement('a');
      a.href = redirectUrl;
      a.textContent = M.continueLink;
      doneText.appendChild(a);
      window.location.assign(redirectUrl);
      return;
    }
    doneTitle.focus();
  }

  function processing() {
    if (link || !viewUrl) {
      // Every pay of a link is a payment of its own: no second attempt from this page.
      lock();
      say(M.processingOnce, true);
      return;
    }
    say(M.processingWait, true);
    poll(0);
  }

  // A session's payment still being processed: the session completes once it has succeeded.
  function poll(round) {
    lock();
    button.textContent = M.processing;
    setTimeout(function () {
      fetch(viewUrl, { credentials: 'omit', cache: 'no-store' }).then(function (res) { return res.json(); }).then(function (json) {
        var s = json && json.data;
        if (s && s.status === 'complete') return succeed(s.successUrl);
        if (s && s.status === 'expired') { button.textContent = buttonLabel; return say(M.expired); }
        next();
      }, next);
    }, 2000);
    function next() {
      if (round < 30) return poll(round + 1);
      setBusy(false);
      say(M.noResultYet, true);
    }
  }

  // Back from a 3-D Secure challenge (the page's ?payment_id=): that payment's outcome is shown as
  // a pay's answer would be, once; the address loses the parameter, so a reload shows the form.
  var returned = null;
  try { returned = JSON.parse(form.getAttribute('data-returned') || 'null'); } catch (e) { /* unreadable: nothing to show */ }
  if (returned && typeof returned === 'object') {
    if (window.history && window.history.replaceState && /[?&]payment_id=/.test(window.location.search)) {
      window.history.replaceState(null, '', window.location.pathname);
    }
    result(returned);
  }
})();
`;

export const CARD_FORM_SCRIPT = pageScript(SOURCE);
