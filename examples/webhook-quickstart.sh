#!/bin/sh
# Receive a verified webhook from a Payorch running on this machine (docs/webhooks.md).
# Run from the Payorch directory, in two steps:
#
#   sh examples/webhook-quickstart.sh cert   # before starting Payorch: the receiver's certificate
#   sh examples/webhook-quickstart.sh run    # with Payorch running: register, receive, verify
#
# Defaults match a Payorch started with `npm start` and nothing else configured; override them
# in the environment if yours differs.
set -eu

DIR=${QUICKSTART_DIR:-webhook-quickstart}             # receiver certificate and key (ignored by git)
PAYORCH_URL=${PAYORCH_URL:-https://localhost:8443}    # Payorch's address (PORT 8443)
PAYORCH_CA=${PAYORCH_CA:-data/tls/cert.pem}           # Payorch's self-signed certificate (DATA_DIR ./data)
RECEIVER_PORT=${RECEIVER_PORT:-9443}                  # any free port but Payorch's 8443 and 8080
EXAMPLES=$(cd "$(dirname "$0")" && pwd)

case "${1:-}" in
cert)
  umask 077 # the directory and its private key: yours alone
  mkdir -p "$DIR"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>/dev/null
  echo "Receiver certificate written to $DIR/cert.pem. Now (re)start Payorch with:"
  echo "  WEBHOOK_ALLOW_PRIVATE=true WEBHOOK_CA_FILE=$DIR/cert.pem npm start"
  ;;
run)
  : "${PAYORCH_KEY:?set PAYORCH_KEY to a test key (sk_test_...), e.g. the one Payorch printed when it first started}"
  [ -f "$DIR/cert.pem" ] || { echo "no $DIR/cert.pem: run 'sh $0 cert' first" >&2; exit 1; }
  api() {
    curl -sS --fail-with-body --cacert "$PAYORCH_CA" -H "Authorization: Bearer $PAYORCH_KEY" \
      -H 'Content-Type: application/json' "$@"
  }

  # 1. Register the receiver. The answer carries the endpoint's secret, shown only this once.
  endpoint=$(api -d "{\"url\": \"https://localhost:$RECEIVER_PORT/\", \"events\": [\"customer.created\"]}" \
    "$PAYORCH_URL/v1/webhook-endpoints") || { echo "$endpoint" >&2; exit 1; }
  secret=$(printf '%s' "$endpoint" | node -e 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => console.log(JSON.parse(s).data.secret))')
  endpoint_id=$(printf '%s' "$endpoint" | node -e 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => console.log(JSON.parse(s).data.id))')
  echo "registered endpoint $endpoint_id for https://localhost:$RECEIVER_PORT/"

  # 2. Start the example receiver with that secret; it verifies every delivery's signature.
  WEBHOOK_SECRET=$secret TLS_CERT_FILE=$DIR/cert.pem TLS_KEY_FILE=$DIR/key.pem PORT=$RECEIVER_PORT \
    node "$EXAMPLES/webhook-receiver.js" &
  receiver=$!
  # On the way out (Ctrl-C included) stop the receiver and delete the endpoint, so a later run
  # does not leave this one failing its deliveries for days.
  cleanup() {
    trap - EXIT INT TERM
    kill "$receiver" 2>/dev/null || true
    api -X DELETE "$PAYORCH_URL/v1/webhook-endpoints/$endpoint_id" >/dev/null && echo "deleted endpoint $endpoint_id"
  }
  trap cleanup EXIT INT TERM
  tries=0
  until curl -s -o /dev/null --cacert "$DIR/cert.pem" "https://localhost:$RECEIVER_PORT/"; do
    tries=$((tries + 1))
    [ "$tries" -lt 30 ] || { echo "the receiver did not start" >&2; exit 1; }
    sleep 1
  done

  # 3. Make something happen: creating a customer records customer.created, delivered at once.
  # A new e-mail address each run: an account refuses a second customer with the same one.
  email="webhook-quickstart-$(date +%s)-$$@example.com"
  customer=$(api -d "{\"email\": \"$email\"}" "$PAYORCH_URL/v1/customers") || { echo "$customer" >&2; exit 1; }
  echo "created a customer; the receiver prints the verified event below (Ctrl-C stops it)"
  wait "$receiver"
  ;;
*)
  echo "usage: sh $0 cert|run" >&2
  exit 2
  ;;
esac
