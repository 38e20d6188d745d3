# Verifies one webhook delivery: the raw body on stdin, the headers and the secret in the
# environment. Exit 0: accepted; 1: refused. Python 3.7 or later, standard library only.
import base64
import binascii
import hashlib
import hmac
import os
import re
import sys
import time

TOLERANCE_SECONDS = 300
STANDARD_SECRET = re.compile(r"whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)")


def standard_key(secret):
    """webhook-signature's key: the decoded bytes of a whsec_ secret in the Standard Webhooks
    form (standard base64 of 24 to 64 bytes), the UTF-8 bytes of any other secret."""
    match = STANDARD_SECRET.fullmatch(secret)
    if match:
        decoded = base64.b64decode(match.group(1))
        if 24 <= len(decoded) <= 64 and base64.b64encode(decoded).decode("ascii") == match.group(1):
            return decoded
    return secret.encode("utf-8")


def standard_signature_valid(body, webhook_id, timestamp, signatures, secret):
    """webhook-signature: "v1,<base64 HMAC-SHA256 of {webhook-id}.{webhook-timestamp}.{body}>",
    one per valid secret, space-separated; the timestamp at most 5 minutes from now."""
    if not re.fullmatch(r"[0-9]{1,15}", timestamp) or abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        return False
    signed = f"{webhook_id}.{timestamp}.".encode("utf-8") + body
    expected = hmac.new(standard_key(secret), signed, hashlib.sha256).digest()
    for signature in signatures.split(" "):
        if not signature.startswith("v1,"):
            continue
        try:
            given = base64.b64decode(signature[3:], validate=True)
        except binascii.Error:
            continue
        if hmac.compare_digest(given, expected):  # constant time
            return True
    return False


def service_signature_valid(body, signature, secret):
    """X-Service-Signature: lowercase hex HMAC-SHA256 of the body, keyed with the secret's UTF-8 bytes."""
    if not re.fullmatch(r"[0-9a-fA-F]{64}", signature):
        return False
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).digest()
    return hmac.compare_digest(bytes.fromhex(signature), expected)


def main():
    secret = os.environ.get("WEBHOOK_SECRET", "")
    signatures = os.environ.get("WEBHOOK_SIGNATURE")
    service_signature = os.environ.get("X_SERVICE_SIGNATURE")
    body = sys.stdin.buffer.read()  # the raw bytes, never re-serialised JSON
    checked, valid = False, secret != ""
    if signatures is not None:
        checked = True
        webhook_id, timestamp = os.environ.get("WEBHOOK_ID"), os.environ.get("WEBHOOK_TIMESTAMP")
        valid = valid and webhook_id is not None and timestamp is not None and standard_signature_valid(body, webhook_id, timestamp, signatures, secret)
    if service_signature is not None:
        checked = True
        valid = valid and service_signature_valid(body, service_signature, secret)
    sys.exit(0 if checked and valid else 1)


if __name__ == "__main__":
    main()
