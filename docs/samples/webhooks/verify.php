<?php
// Verifies one webhook delivery: the raw body on stdin, the headers and the secret in the
// environment. Exit 0: accepted; 1: refused. PHP 8.0 or later, no extensions beyond the core.
const TOLERANCE_SECONDS = 300;

// webhook-signature's key: the decoded bytes of a whsec_ secret in the Standard Webhooks form
// (standard base64 of 24 to 64 bytes), the UTF-8 bytes of any other secret.
function standard_key(string $secret): string
{
    if (preg_match('~^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$~D', $secret, $m)) {
        $decoded = base64_decode($m[1], true);
        if ($decoded !== false && strlen($decoded) >= 24 && strlen($decoded) <= 64 && base64_encode($decoded) === $m[1]) {
            return $decoded;
        }
    }
    return $secret;
}

// webhook-signature: "v1,<base64 HMAC-SHA256 of {webhook-id}.{webhook-timestamp}.{body}>", one
// per valid secret, space-separated; the timestamp at most 5 minutes from now.
function standard_signature_valid(string $body, string $id, string $timestamp, string $signatures, string $secret): bool
{
    if (!preg_match('/^[0-9]{1,15}$/D', $timestamp) || abs(time() - (int) $timestamp) > TOLERANCE_SECONDS) {
        return false;
    }
    $expected = hash_hmac('sha256', "{$id}.{$timestamp}.{$body}", standard_key($secret), true);
    foreach (explode(' ', $signatures) as $signature) {
        if (!str_starts_with($signature, 'v1,')) {
            continue;
        }
        $given = base64_decode(substr($signature, 3), true);
        if ($given !== false && hash_equals($expected, $given)) { // constant time
            return true;
        }
    }
    return false;
}

// X-Service-Signature: lowercase hex HMAC-SHA256 of the body, keyed with the secret's UTF-8 bytes.
function service_signature_valid(string $body, string $signature, string $secret): bool
{
    return preg_match('/^[0-9a-fA-F]{64}$/D', $signature) === 1
        && hash_equals(hash_hmac('sha256', $body, $secret), strtolower($signature));
}

$secret = (string) getenv('WEBHOOK_SECRET');
$signatures = getenv('WEBHOOK_SIGNATURE');
$serviceSignature = getenv('X_SERVICE_SIGNATURE');
$body = file_get_contents('php://stdin'); // the raw bytes; in a web request: file_get_contents('php://input')
$checked = false;
$valid = $secret !== '';
if ($signatures !== false) {
    $checked = true;
    $id = getenv('WEBHOOK_ID');
    $timestamp = getenv('WEBHOOK_TIMESTAMP');
    $valid = $valid && $id !== false && $timestamp !== false && standard_signature_valid($body, $id, $timestamp, $signatures, $secret);
}
if ($serviceSignature !== false) {
    $checked = true;
    $valid = $valid && service_signature_valid($body, $serviceSignature, $secret);
}
exit($checked && $valid ? 0 : 1);
