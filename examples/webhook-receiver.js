#!/usr/bin/env node
'use strict';
/*
 * A dependency-free Payorch webhook receiver (Node 18+). Copy it, replace handleEvent, deploy.
 *
 *   WEBHOOK_SECRET=whsec_... TLS_CERT_FILE=cert.pem TLS_KEY_FILE=key.pem PORT=9443 \
 *     node examples/webhook-receiver.js
 *
 * It checks the Standard Webhooks headers (https://www.standardwebhooks.com): webhook-signature
 * over "<webhook-id>.<webhook-timestamp>.<raw body>", a webhook-timestamp no more than 5 minutes
 * off this machine's clock, and each webhook-id processed once (a replay, or a retry of a
 * delivery already handled, is acknowledged and not processed again).
 *
 * WEBHOOK_SECRET may hold several secrets separated by commas. After a rotation, for the overlap
 * you chose, webhook-signature carries the old secret's signature and the new one's: a delivery
 * is accepted when one of them matches one of your secrets, so you may switch WEBHOOK_SECRET to
 * the new secret at any time during the overlap.
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const https = require('node:https');

const MAX_BODY_BYTES = 1024 * 1024;
const SEEN_EVENTS_LIMIT = 10000;
/** How far webhook-timestamp may be from this machine's clock, either way (Standard Webhooks: 5 minutes). */
const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;

/** Lower-case hex HMAC-SHA256 of the raw body bytes. */
function signPayload(secret, rawBody) {
  return crypto.createHmac('sha256', secret).update(rawBody).digest('hex');
}

/**
 * True when `header` is the signature of `rawBody` under `secret`, compared in constant time.
 * False when the secret or the header is missing, or their lengths differ.
 */
function verifySignature(secret, rawBody, header) {
  if (typeof secret !== 'string' || secret.length === 0) return false;
  if (typeof header !== 'string' || header.length === 0) return false;
  const expected = Buffer.from(signPayload(secret, rawBody), 'utf8');
  const received = Buffer.from(header, 'utf8');
  // timingSafeEqual throws on different lengths; a length says nothing secret.
  if (received.length !== expected.length) return false;
  return crypto.timingSafeEqual(received, expected);
}

/**
 * The Standard Webhooks HMAC key of a secret: the bytes the part after `whsec_` encodes in
 * standard base64. Secrets made before Payorch sent Standard Webhooks headers are base64url; one
 * holding '-' or '_' is not standard base64 and keys with its own bytes instead (what Standard
 * Webhooks libraries call a raw secret).
 */
function standardKey(secret) {
  const part = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const padding = part.length - part.replace(/=+$/, '').length;
  let digits = part.slice(0, part.length - padding);
  // The reading of the reference library: at least 4 characters, at most 2 '=', a lone last character ignored.
  if (digits.length % 4 === 1) digits = digits.slice(0, -1);
  if (part.length >= 4 && padding <= 2 && /^[A-Za-z0-9+/]*$/.test(digits)) {
    const bytes = Buffer.from(digits, 'base64');
    if (bytes.length > 0) return bytes;
  }
  return Buffer.from(part, 'utf8');
}

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`: one entry of webhook-signature. */
function standardSignature(secret, webhookId, timestamp, rawBody) {
  return `v1,${crypto.createHmac('sha256', standardKey(secret)).update(`${webhookId}.${timestamp}.`).update(rawBody).digest('base64')}`;
}

/**
 * Checks a delivery's Standard Webhooks headers (names in lower case, as Node gives them)
 * against `secrets` at `nowSeconds`. Returns null when it verifies, else why not:
 * 'missing_headers', 'invalid_timestamp', 'timestamp_too_old', 'timestamp_too_new',
 * 'no_secret' or 'invalid_signature'.
 */
function verifyStandardWebhook(secrets, rawBody, headers, nowSeconds = Math.floor(Date.now() / 1000)) {
  const webhookId = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signature = headers['webhook-signature'];
  if ([webhookId, timestamp, signature].some((h) => typeof h !== 'string' || h.length === 0)) return 'missing_headers';
  if (!/^\d{1,15}$/.test(timestamp)) return 'invalid_timestamp';
  // Outside the window a captured delivery could be replayed after this receiver forgot its id.
  if (nowSeconds - Number(timestamp) > TIMESTAMP_TOLERANCE_SECONDS) return 'timestamp_too_old';
  if (Number(timestamp) - nowSeconds > TIMESTAMP_TOLERANCE_SECONDS) return 'timestamp_too_new';
  const list = (Array.isArray(secrets) ? secrets : [secrets]).filter((s) => typeof s === 'string' && s.length > 0);
  if (list.length === 0) return 'no_secret';
  const received = signature.split(' ').filter((s) => s.startsWith('v1,')).map((s) => Buffer.from(s, 'utf8'));
  for (const secret of list) {
    const expected = Buffer.from(standardSignature(secret, webhookId, timestamp, rawBody), 'utf8');
    // timingSafeEqual throws on different lengths; a length says nothing secret.
    if (received.some((r) => r.length === expected.length && crypto.timingSafeEqual(r, expected))) return null;
  }
  return 'invalid_signature';
}

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * An HTTPS server (not yet listening) that accepts signed deliveries.
 * onEvent(event, { eventId, attempt, duplicate }) runs after the 200 has been sent.
 */
function createReceiver({ secret, cert, key, onEvent }) {
  const secrets = (Array.isArray(secret) ? secret : [secret]).filter((s) => typeof s === 'string' && s.length > 0);
  // Deliveries are at-least-once: remember recent event ids and process each once.
  const seen = new Set();

  return https.createServer({ cert, key }, (req, res) => {
    if (req.method !== 'POST') return send(res, 405, { error: 'method not allowed' });
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) return send(res, 413, { error: 'body too large' });
      // Verify the exact bytes received: re-serialising parsed JSON would change them.
      const rawBody = Buffer.concat(chunks);
      const refused = verifyStandardWebhook(secrets, rawBody, req.headers);
      if (refused === 'missing_headers' || refused === 'invalid_timestamp') return send(res, 400, { error: refused });
      if (refused !== null) return send(res, 401, { error: refused });

      let event;
      try {
        event = JSON.parse(rawBody.toString('utf8'));
      } catch {
        return send(res, 400, { error: 'body is not JSON' });
      }
      if (event === null || typeof event !== 'object' || typeof event.id !== 'string' || event.id === '') {
        return send(res, 400, { error: 'body is not an event (no id)' });
      }
      // webhook-id is signed (it is part of what webhook-signature covers) and is the event id:
      // the same on every attempt and on a resend. Deliveries are at-least-once, and a captured
      // one may be replayed within the timestamp window: each id is processed once.
      const eventId = req.headers['webhook-id'];
      // Informative only (unsigned): never decide anything on it.
      const attempt = Number(req.headers['x-service-delivery-attempt'] || 1);
      const duplicate = seen.has(eventId);
      if (!duplicate) {
        seen.add(eventId);
        if (seen.size > SEEN_EVENTS_LIMIT) seen.delete(seen.values().next().value);
      }
      // Answer first, work after: slow handlers cause timeouts and duplicate deliveries.
      send(res, 200, { received: true });
      setImmediate(() => {
        try {
          if (onEvent) onEvent(event, { eventId, attempt, duplicate });
        } catch (err) {
          console.error('event handler failed:', err);
        }
      });
    });
    req.on('error', () => res.destroy());
  });
}

function main() {
  const { WEBHOOK_SECRET, TLS_CERT_FILE, TLS_KEY_FILE } = process.env;
  const port = Number(process.env.PORT || 9443); // not 8443 or 8080: Payorch's own defaults
  if (!WEBHOOK_SECRET) {
    console.error('WEBHOOK_SECRET is required (the whsec_... value shown when the endpoint was created)');
    process.exit(1);
  }
  if (!TLS_CERT_FILE || !TLS_KEY_FILE) {
    console.error('TLS_CERT_FILE and TLS_KEY_FILE are required: deliveries are only sent over HTTPS');
    process.exit(1);
  }
  const server = createReceiver({
    secret: WEBHOOK_SECRET.split(',').map((s) => s.trim()),
    cert: fs.readFileSync(TLS_CERT_FILE),
    key: fs.readFileSync(TLS_KEY_FILE),
    onEvent(event, { eventId, attempt, duplicate }) {
      if (duplicate) {
        console.log(`duplicate ${eventId} (attempt ${attempt}) ignored`);
        return;
      }
      console.log(`received ${event.type} ${eventId} (attempt ${attempt}, livemode ${event.livemode})`);
      console.log(JSON.stringify(event.data && event.data.object, null, 2));
    },
  });
  server.listen(port, () => console.log(`webhook receiver listening on https://localhost:${server.address().port}/`));
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

module.exports = { signPayload, verifySignature, standardKey, standardSignature, verifyStandardWebhook, createReceiver };

if (require.main === module) main();
