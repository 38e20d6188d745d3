// Verifies one webhook delivery: the raw body on stdin, the headers and the secret in the
// environment. Exit 0: accepted; 1: refused. .NET 6 or later (HMACSHA256.HashData,
// Convert.FromHexString, CryptographicOperations.FixedTimeEquals).
using System;
using System.IO;
using System.Security.Cryptography;
using System.Text;
using System.Text.RegularExpressions;

static class Verify
{
    const long ToleranceSeconds = 300;

    // webhook-signature's key: the decoded bytes of a whsec_ secret in the Standard Webhooks
    // form (standard base64 of 24 to 64 bytes), the UTF-8 bytes of any other secret.
    static byte[] StandardKey(string secret)
    {
        var match = Regex.Match(secret, @"^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)\z");
        if (match.Success)
        {
            var encoded = match.Groups[1].Value;
            var decoded = Convert.FromBase64String(encoded);
            if (decoded.Length >= 24 && decoded.Length <= 64 && Convert.ToBase64String(decoded) == encoded) return decoded;
        }
        return Encoding.UTF8.GetBytes(secret);
    }

    // webhook-signature: "v1,<base64 HMAC-SHA256 of {webhook-id}.{webhook-timestamp}.{body}>",
    // one per valid secret, space-separated; the timestamp at most 5 minutes from now.
    static bool StandardSignatureValid(byte[] body, string id, string timestamp, string signatures, string secret)
    {
        if (!Regex.IsMatch(timestamp, @"^[0-9]{1,15}\z")) return false;
        if (Math.Abs(DateTimeOffset.UtcNow.ToUnixTimeSeconds() - long.Parse(timestamp)) > ToleranceSeconds) return false;
        var prefix = Encoding.UTF8.GetBytes($"{id}.{timestamp}.");
        var signed = new byte[prefix.Length + body.Length];
        prefix.CopyTo(signed, 0);
        body.CopyTo(signed, prefix.Length);
        var expected = HMACSHA256.HashData(StandardKey(secret), signed);
        foreach (var signature in signatures.Split(' '))
        {
            if (!signature.StartsWith("v1,", StringComparison.Ordinal)) continue;
            byte[] given;
            try { given = Convert.FromBase64String(signature.Substring(3)); }
            catch (FormatException) { continue; }
            if (CryptographicOperations.FixedTimeEquals(given, expected)) return true; // constant time
        }
        return false;
    }

    // X-Service-Signature: lowercase hex HMAC-SHA256 of the body, keyed with the secret's UTF-8 bytes.
    static bool ServiceSignatureValid(byte[] body, string signature, string secret)
    {
        if (!Regex.IsMatch(signature, @"^[0-9a-fA-F]{64}\z")) return false;
        var expected = HMACSHA256.HashData(Encoding.UTF8.GetBytes(secret), body);
        return CryptographicOperations.FixedTimeEquals(Convert.FromHexString(signature), expected);
    }

    static int Main()
    {
        var secret = Environment.GetEnvironmentVariable("WEBHOOK_SECRET") ?? "";
        var id = Environment.GetEnvironmentVariable("WEBHOOK_ID");
        var timestamp = Environment.GetEnvironmentVariable("WEBHOOK_TIMESTAMP");
        var signatures = Environment.GetEnvironmentVariable("WEBHOOK_SIGNATURE");
        var serviceSignature = Environment.GetEnvironmentVariable("X_SERVICE_SIGNATURE");
        using var buffer = new MemoryStream();
        Console.OpenStandardInput().CopyTo(buffer); // the raw bytes, never re-serialised JSON
        var body = buffer.ToArray();
        var anyChecked = false;
        var valid = secret != "";
        if (signatures != null)
        {
            anyChecked = true;
            valid = valid && id != null && timestamp != null && StandardSignatureValid(body, id, timestamp, signatures, secret);
        }
        if (serviceSignature != null)
        {
            anyChecked = true;
            valid = valid && ServiceSignatureValid(body, serviceSignature, secret);
        }
        return anyChecked && valid ? 0 : 1;
    }
}
