// Verifies one webhook delivery: the raw body on stdin, the headers and the secret in the
// environment. Exit 0: accepted; 1: refused. Run with JDK 17 or later: `java Verify.java`.
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class Verify {
    static final long TOLERANCE_SECONDS = 300;

    static byte[] hmacSha256(byte[] key, byte[] data) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key, "HmacSHA256"));
        return mac.doFinal(data);
    }

    // webhook-signature's key: the decoded bytes of a whsec_ secret in the Standard Webhooks
    // form (standard base64 of 24 to 64 bytes), the UTF-8 bytes of any other secret.
    static byte[] standardKey(String secret) {
        if (secret.matches("whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")) {
            String encoded = secret.substring("whsec_".length());
            byte[] decoded = Base64.getDecoder().decode(encoded);
            if (decoded.length >= 24 && decoded.length <= 64 && Base64.getEncoder().encodeToString(decoded).equals(encoded)) return decoded;
        }
        return secret.getBytes(StandardCharsets.UTF_8);
    }

    // webhook-signature: "v1,<base64 HMAC-SHA256 of {webhook-id}.{webhook-timestamp}.{body}>",
    // one per valid secret, space-separated; the timestamp at most 5 minutes from now.
    static boolean standardSignatureValid(byte[] body, String id, String timestamp, String signatures, String secret) throws Exception {
        if (!timestamp.matches("[0-9]{1,15}")) return false;
        if (Math.abs(System.currentTimeMillis() / 1000 - Long.parseLong(timestamp)) > TOLERANCE_SECONDS) return false;
        byte[] prefix = (id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8);
        byte[] signed = new byte[prefix.length + body.length];
        System.arraycopy(prefix, 0, signed, 0, prefix.length);
        System.arraycopy(body, 0, signed, prefix.length, body.length);
        byte[] expected = hmacSha256(standardKey(secret), signed);
        for (String signature : signatures.split(" ")) {
            if (!signature.startsWith("v1,")) continue;
            byte[] given;
            try {
                given = Base64.getDecoder().decode(signature.substring(3));
            } catch (IllegalArgumentException notBase64) {
                continue;
            }
            if (MessageDigest.isEqual(given, expected)) return true; // constant time
        }
        return false;
    }

    // X-Service-Signature: lowercase hex HMAC-SHA256 of the body, keyed with the secret's UTF-8 bytes.
    static boolean serviceSignatureValid(byte[] body, String signature, String secret) throws Exception {
        if (!signature.matches("[0-9a-fA-F]{64}")) return false;
        byte[] expected = hmacSha256(secret.getBytes(StandardCharsets.UTF_8), body);
        return MessageDigest.isEqual(HexFormat.of().parseHex(signature), expected);
    }

    public static void main(String[] args) throws Exception {
        String secret = System.getenv("WEBHOOK_SECRET");
        String id = System.getenv("WEBHOOK_ID");
        String timestamp = System.getenv("WEBHOOK_TIMESTAMP");
        String signatures = System.getenv("WEBHOOK_SIGNATURE");
        String serviceSignature = System.getenv("X_SERVICE_SIGNATURE");
        byte[] body = System.in.readAllBytes(); // the raw bytes, never re-serialised JSON
        boolean checked = false;
        boolean valid = secret != null && !secret.isEmpty();
        if (signatures != null) {
            checked = true;
            valid = valid && id != null && timestamp != null && standardSignatureValid(body, id, timestamp, signatures, secret);
        }
        if (serviceSignature != null) {
            checked = true;
            valid = valid && serviceSignatureValid(body, serviceSignature, secret);
        }
        System.exit(checked && valid ? 0 : 1);
    }
}
