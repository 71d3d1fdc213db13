package herald.http.http1;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A property test of {@link Http1Decoder}: random request heads (and bodies) built from a model, some with one
 * fault injected, fed cut at random places; what the decoder emits must match what the model expects: the fault's
 * status, or the method, target, version, lower-cased trimmed headers and body bytes of a valid request.
 */
class Http1FuzzTest {
    private static final String[] METHODS = {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "PROPFIND",
        "M-SEARCH"};
    private static final String PATH_CHARS = "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789-._~!$&'()*+,;=:@/%";
    private static final String NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
    private static final String VALUE_CHARS = "abcdefghijklmnopqrstuvwxyz ABC0123456789\t!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

    /** One generated request: its parts, and the status expected for it. */
    static final class Req {
        String method;
        String target;
        String version = "HTTP/1.1";
        List<String[]> headers = new ArrayList<>();
        String body;
        boolean chunked;
        int expected;
        /** Extra raw text instead of the header lines' normal rendering (a fault in the framing). */
        String rawHeaderLine;
        String eol = "\r\n";

        String text(Random rnd) {
            StringBuilder s = new StringBuilder(method).append(' ').append(target).append(' ').append(version)
                .append("\r\n");
            for (String[] h : headers) {
                s.append(h[0]).append(':').append(h[1]).append(eol);
            }
            if (rawHeaderLine != null) {
                s.append(rawHeaderLine);
            }
            s.append("\r\n");
            if (body != null) {
                if (chunked) {
                    int i = 0;
                    while (i < body.length()) {
                        int n = 1 + rnd.nextInt(Math.max(1, body.length() - i));
                        s.append(Integer.toHexString(n)).append(rnd.nextBoolean() ? ";x=y" : "").append("\r\n")
                            .append(body, i, i + n).append("\r\n");
                        i += n;
                    }
                    s.append("0\r\n\r\n");
                } else {
                    s.append(body);
                }
            }
            return s.toString();
        }

        /** What {@link Http1DecoderTest#describe} should say. */
        List<String> expectation() {
            if (expected != 0) {
                return List.of("HEAD " + expected);
            }
            StringBuilder head = new StringBuilder("HEAD 0 ").append(method).append(' ').append(target).append(' ')
                .append(version);
            for (String[] h : headers) {
                head.append(" [").append(h[0].toLowerCase(java.util.Locale.ROOT)).append('=')
                    .append(h[1].replaceAll("^[ \\t]+|[ \\t]+$", "")).append(']');
            }
            List<String> out = new ArrayList<>(List.of(head.toString()));
            if (body != null) {
                out.add("BODY " + body);
            }
            return out;
        }
    }

    private static String random(Random rnd, String chars, int min, int max) {
        int n = min + rnd.nextInt(max - min + 1);
        StringBuilder s = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            s.append(chars.charAt(rnd.nextInt(chars.length())));
        }
        return s.toString();
    }

    static Req valid(Random rnd) {
        Req r = new Req();
        r.method = METHODS[rnd.nextInt(METHODS.length)];
        r.target = "/" + random(rnd, PATH_CHARS, 0, 30) + (rnd.nextBoolean() ? "?" + random(rnd, PATH_CHARS + "?", 0, 20) : "");
        r.version = rnd.nextInt(5) == 0 ? "HTTP/1.0" : "HTTP/1.1";
        if (r.version.equals("HTTP/1.1") || rnd.nextBoolean()) {
            r.headers.add(new String[] {"Host", " example" + rnd.nextInt(100) + ".org" + (rnd.nextBoolean() ? ":8080" : "")});
        }
        int n = rnd.nextInt(7);
        for (int i = 0; i < n; i++) {
            String value = random(rnd, VALUE_CHARS, 0, 40);
            r.headers.add(rnd.nextInt(4) == 0 ? new String[] {"Accept", " text/plain"}
                : new String[] {"X-" + random(rnd, NAME_CHARS, 1, 12), (rnd.nextBoolean() ? " " : "") + value});
        }
        if (rnd.nextInt(3) == 0) {
            r.body = random(rnd, VALUE_CHARS, 1, 200);
            r.chunked = r.version.equals("HTTP/1.1") && rnd.nextBoolean();
            r.headers.add(r.chunked ? new String[] {"Transfer-Encoding", " chunked"}
                : new String[] {"Content-Length", " " + r.body.length()});
        }
        java.util.Collections.shuffle(r.headers, rnd);
        return r;
    }

    /** Injects one fault; sets the status expected for it. */
    static void breakIt(Random rnd, Req r) {
        r.body = null; // a refused head ends decoding: no body is expected after it
        r.headers.removeIf(h -> h[0].equals("Content-Length") || h[0].equals("Transfer-Encoding"));
        r.headers.removeIf(h -> h[0].equals("Host"));
        r.headers.add(0, new String[] {"Host", " h"});
        switch (rnd.nextInt(17)) {
            case 0 -> { r.method = r.method.charAt(0) + r.method.substring(1).toLowerCase(); r.expected = 501; }
            case 1 -> { r.target = r.target + " x"; r.expected = 400; }
            case 2 -> { r.target = r.target + "#f"; r.expected = 400; }
            case 3 -> { r.version = "HTTP/" + (2 + rnd.nextInt(7)) + "." + rnd.nextInt(10); r.expected = 505; }
            case 4 -> { r.version = rnd.nextBoolean() ? "HTTP/1.2" : "http/1.1"; r.expected = 400; }
            case 5 -> { r.headers.add(new String[] {"X-Bad" + (rnd.nextBoolean() ? " Name" : "(x)"), " v"}); r.expected = 400; }
            case 6 -> { r.headers.add(new String[] {"X-Space ", " v"}); r.expected = 400; }
            case 7 -> { r.headers.add(new String[] {"X-Nul", " a" + (rnd.nextBoolean() ? '\0' : '\r') + "b"}); r.expected = 400; }
            case 8 -> { r.rawHeaderLine = "X-Lf: v\n"; r.expected = 400; }
            case 9 -> { r.rawHeaderLine = "X-Fold: a\r\n  b\r\n"; r.expected = 400; }
            case 10 -> { r.headers.remove(0); r.version = "HTTP/1.1"; r.expected = 400; }
            case 11 -> { r.headers.add(new String[] {"Host", " h2"}); r.expected = 400; }
            case 12 -> { r.headers.add(new String[] {"Content-Length", " 1"}); r.headers.add(new String[] {"Transfer-Encoding", " chunked"}); r.version = "HTTP/1.1"; r.expected = 400; }
            case 13 -> { r.headers.add(new String[] {"Transfer-Encoding", " gzip"}); r.version = "HTTP/1.1"; r.expected = 501; }
            case 14 -> { r.headers.add(new String[] {"Content-Length", " 1" + (char) ('a' + rnd.nextInt(26))}); r.expected = 400; }
            case 15 -> { r.headers.add(new String[] {"Content-Length", " " + (Http1DecoderTest.MAX_BODY + 1 + rnd.nextInt(1000))}); r.expected = 413; }
            default -> {
                if (rnd.nextBoolean()) {
                    r.target = "/" + "a".repeat(Http1DecoderTest.MAX_LINE);
                    r.expected = 414;
                } else {
                    r.headers.add(new String[] {"X-Big", " " + "b".repeat(Http1DecoderTest.MAX_HEADER)});
                    r.expected = 431;
                }
            }
        }
    }

    @Test
    void randomHeadsMatchTheModel() {
        long seed = Long.getLong("herald.fuzz.seed", 20261122L);
        Random rnd = new Random(seed);
        java.util.Set<Integer> seen = new java.util.TreeSet<>();
        for (int i = 0; i < 3000; i++) {
            Req r = valid(rnd);
            if (rnd.nextBoolean()) {
                breakIt(rnd, r);
            }
            String text = r.text(rnd);
            int cut = 1 + rnd.nextInt(text.length());
            int cut2 = cut + rnd.nextInt(text.length() - cut + 1);
            List<String> got = Http1DecoderTest.describe(cut2 > cut && cut2 < text.length()
                ? Http1DecoderTest.decode(text, cut, cut2) : Http1DecoderTest.decode(text, cut));
            assertEquals(r.expectation(), got, "seed " + seed + " case " + i + ": " + text.replace("\r", "\\r")
                .replace("\n", "\\n").replace("\0", "\\0"));
            seen.add(r.expected);
        }
        assertEquals(java.util.Set.of(0, 400, 413, 414, 431, 501, 505), seen, "every kind of outcome was generated");
    }
}
