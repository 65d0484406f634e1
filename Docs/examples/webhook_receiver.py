#!/usr/bin/env python3
"""A small receiver for surveyd webhooks: checks each delivery's signature and prints the event.

    WEBHOOK_SECRET='whsec_...' ./webhook_receiver.py [PORT]      # default port 8000

Standard library only. Answers 204 to a genuine delivery (and to a repeat of one, which it
prints only once) and 401 to anything else. See Docs/webhooks.md.
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

TOLERANCE = 5 * 60  # seconds between the sender's clock and ours


def signing_key(secret):
    """The HMAC key: the bytes base64-encoded after `whsec_`."""
    if not secret.startswith("whsec_"):
        raise ValueError("a webhook secret starts with whsec_")
    return base64.b64decode(secret[len("whsec_"):])


def verify(key, headers, body, now=None):
    """The event (a dict) if the delivery is genuine; raises ValueError otherwise."""
    event_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not (event_id and timestamp and signatures):
        raise ValueError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        sent = int(timestamp)
    except ValueError:
        raise ValueError("webhook-timestamp is not a number") from None
    if abs((time.time() if now is None else now) - sent) > TOLERANCE:
        raise ValueError("webhook-timestamp is more than 5 minutes away")
    signed = event_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
    # During a secret rotation there are two signatures, separated by a space: one must match.
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected):
            return json.loads(body)
    raise ValueError("no signature matches")


class Receiver(BaseHTTPRequestHandler):
    key = b""
    seen = set()  # event ids already handled; keep them in your database in a real receiver

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            event = verify(self.key, self.headers, body)
        except ValueError as e:
            self.log_message("refused: %s", e)
            self.send_response(401)
            self.end_headers()
            return
        event_id = self.headers["webhook-id"]
        if event_id in self.seen:
            print(f"{event_id} again (already handled)", flush=True)
        else:
            self.seen.add(event_id)
            print(f"{event_id} {event['type']} at {event['timestamp']}", flush=True)
            print(json.dumps(event["data"], indent=2, ensure_ascii=False), flush=True)
        self.send_response(204)
        self.end_headers()


def main():
    secret = os.environ.get("WEBHOOK_SECRET")
    if not secret:
        sys.exit("set WEBHOOK_SECRET to the webhook's secret (whsec_...)")
    Receiver.key = signing_key(secret)
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    print(f"listening on port {port}", flush=True)
    HTTPServer(("", port), Receiver).serve_forever()


if __name__ == "__main__":
    main()
