package herald.http.http1;

import java.nio.charset.StandardCharsets;

/**
 * Byte tables of the HTTP/1.1 parser: which bytes are token characters (RFC 9110 5.6.2), and the common header
 * names as shared lower-case Strings, found by the hash the parser computes while it lower-cases a name.
 */
final class Http1Names {
    static final String HOST = "host";
    static final String CONTENT_LENGTH = "content-length";
    static final String TRANSFER_ENCODING = "transfer-encoding";
    static final String CONNECTION = "connection";
    static final String EXPECT = "expect";

    /** tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA. */
    static final boolean[] TCHAR = new boolean[256];

    private static final int MASK = 255;
    private static final String[] TABLE = new String[MASK + 1];
    private static final byte[][] BYTES = new byte[MASK + 1][];

    static {
        for (int c = '0'; c <= '9'; c++) {
            TCHAR[c] = true;
        }
        for (int c = 'a'; c <= 'z'; c++) {
            TCHAR[c] = true;
            TCHAR[c - 32] = true;
        }
        for (char c : "!#$%&'*+-.^_`|~".toCharArray()) {
            TCHAR[c] = true;
        }
        for (String name : new String[] {HOST, CONTENT_LENGTH, TRANSFER_ENCODING, CONNECTION, EXPECT, "accept",
            "user-agent", "accept-encoding", "accept-language", "accept-charset", "content-type", "cookie",
            "cache-control", "upgrade", "origin", "referer", "authorization", "pragma", "if-none-match",
            "if-modified-since", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-requested-with",
            "x-real-ip", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
            "sec-websocket-protocol", "sec-fetch-mode", "sec-fetch-site", "sec-fetch-dest", "sec-fetch-user",
            "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform", "upgrade-insecure-requests", "dnt", "te",
            "http2-settings", "keep-alive", "priority", "range", "if-match", "if-range", "x-request-id",
            "traceparent", "content-encoding"}) {
            byte[] b = name.getBytes(StandardCharsets.US_ASCII);
            int h = 0;
            for (byte x : b) {
                h = 31 * h + x;
            }
            int i = slot(h);
            while (TABLE[i] != null) {
                i = (i + 1) & MASK;
            }
            TABLE[i] = name;
            BYTES[i] = b;
        }
    }

    private Http1Names() {}

    private static int slot(int h) {
        return (h ^ (h >>> 9) ^ (h >>> 17)) & MASK;
    }

    /**
     * The shared String of the lower-case name {@code b[s, e)} whose hash ({@code h = 31 * h + byte}) is
     * {@code h}, or null when it is not a common name.
     */
    static String known(byte[] b, int s, int e, int h) {
        for (int i = slot(h); ; i = (i + 1) & MASK) {
            byte[] k = BYTES[i];
            if (k == null) {
                return null;
            }
            if (Http1Bytes.same(k, b, s, e)) {
                return TABLE[i];
            }
        }
    }
}
