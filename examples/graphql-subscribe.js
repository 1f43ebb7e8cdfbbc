// Prints the account's events as they commit: KEY=sk_test_… node examples/graphql-subscribe.js
const fs = require('node:fs');
const WebSocket = require('ws');
const { createClient } = require('graphql-ws');

// Trust the certificate `npm start` generated (run from the checkout; a real CA needs no `ca`).
const ca = fs.readFileSync('data/tls/cert.pem');
class TrustingWebSocket extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols, { ca });
  }
}

const client = createClient({
  url: process.env.PAYORCH_WS_URL || 'wss://localhost:8443/graphql',
  webSocketImpl: TrustingWebSocket,
  connectionParams: { authorization: `Bearer ${process.env.KEY}` },
  retryAttempts: 0,
});

client.subscribe(
  { query: 'subscription { events { id type createdAt } }' },
  {
    next: ({ data, errors }) => console.log(JSON.stringify(data ? data.events : errors)),
    error: (err) => {
      // A refused key closes the socket with 4403 and a reason.
      console.error('subscription ended:', err.reason || err.message || err);
      process.exit(1);
    },
    complete: () => process.exit(0),
  },
);
