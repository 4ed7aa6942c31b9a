#!/usr/bin/env python3
"""Sends one signed request to the GPU Order Relay with the Python 3 standard library only.

    GPU_RELAY_URL=http://127.0.0.1:5000 GPU_RELAY_SECRET=... \\
      python3 examples/sign_request.py /webhook/create-order '{"gpu_type":"RTX 4090","max_price":0.5}'

Signature v2: X-Webhook-Signature = "v2=" + lowercase hex HMAC-SHA256, keyed with the webhook secret,
of b"v2.<timestamp>.POST.<path>.<body>", where <timestamp> is the X-Webhook-Timestamp header (Unix
seconds) and <path> the request path with its query string, exactly as sent.
GPU_RELAY_DRY_RUN=1 prints the two headers instead of sending; GPU_RELAY_TIMESTAMP fixes the timestamp
(the worked example in docs/api.md).
"""
import hashlib
import hmac
import os
import sys
import time
import urllib.error
import urllib.request

url = os.environ.get("GPU_RELAY_URL")
secret = os.environ.get("GPU_RELAY_SECRET")
if not url or not secret:
    sys.exit("set GPU_RELAY_URL and GPU_RELAY_SECRET")

path = sys.argv[1] if len(sys.argv) > 1 else "/webhook/create-order"
body = (sys.argv[2] if len(sys.argv) > 2 else '{"gpu_type":"RTX 4090","max_price":0.5}').encode("utf-8")

# Sign the exact bytes that are sent.
timestamp = os.environ.get("GPU_RELAY_TIMESTAMP") or str(int(time.time()))
signed = f"v2.{timestamp}.POST.{path}.".encode("utf-8") + body
signature = "v2=" + hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()

if os.environ.get("GPU_RELAY_DRY_RUN"):
    print(f"X-Webhook-Timestamp: {timestamp}\nX-Webhook-Signature: {signature}")
    sys.exit(0)

request = urllib.request.Request(
    url.rstrip("/") + path,
    data=body,
    method="POST",
    headers={
        "Content-Type": "application/json",
        "X-Webhook-Timestamp": timestamp,
        "X-Webhook-Signature": signature,
    },
)
try:
    with urllib.request.urlopen(request, timeout=30) as response:
        status, answer = response.status, response.read()
except urllib.error.HTTPError as error:  # 4xx/5xx still carry a JSON {"error": ...} body
    status, answer = error.code, error.read()

print(f"HTTP {status}", file=sys.stderr)
print(answer.decode("utf-8"))
sys.exit(0 if 200 <= status < 300 else 1)
