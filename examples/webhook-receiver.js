#!/usr/bin/env node
'use strict';
/*
 * A dependency-free Payorch webhook receiver (Node 18+). Copy it, replace handleEvent, deploy.
 *
 *   WEBHOOK_SECRET=whsec_... TLS_CERT_FILE=cert.pem TLS_KEY_FILE=key.pem PORT=9443 \
 *     node examples/webhook-receiver.js
 *
 * WEBHOOK_SECRET may hold several secrets separated by commas. After a rotation, for the overlap
 * you chose, X-Service-Signature is still made with the old secret and X-Service-Signature-Next
 * with the new one: a delivery is accepted when either matches one of your secrets, so you may
 * switch WEBHOOK_SECRET to the new secret at any time during the overlap.
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const https = require('node:https');

const MAX_BODY_BYTES = 1024 * 1024;
const SEEN_EVENTS_LIMIT = 10000;

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
      const signature = req.headers['x-service-signature'];
      if (typeof signature !== 'string' || signature.length === 0) return send(res, 400, { error: 'missing signature' });
      if (secrets.length === 0) return send(res, 401, { error: 'receiver has no secret configured' });
      // During a rotation's overlap: the old secret's digest, then the new secret's.
      const candidates = [signature, req.headers['x-service-signature-next']].filter((h) => typeof h === 'string' && h.length > 0);
      if (!secrets.some((s) => candidates.some((h) => verifySignature(s, rawBody, h)))) return send(res, 401, { error: 'invalid signature' });

      let event;
      try {
        event = JSON.parse(rawBody.toString('utf8'));
      } catch {
        return send(res, 400, { error: 'body is not JSON' });
      }
      // Deduplicate on the id inside the signed body: headers are not signed, so a captured
      // delivery resent with another X-Service-Event-Id must still count as the same event.
      if (event === null || typeof event !== 'object' || typeof event.id !== 'string' || event.id === '') {
        return send(res, 400, { error: 'body is not an event (no id)' });
      }
      const eventId = event.id;
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

module.exports = { signPayload, verifySignature, createReceiver };

if (require.main === module) main();
