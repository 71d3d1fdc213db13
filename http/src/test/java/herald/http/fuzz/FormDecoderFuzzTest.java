package herald.http.fuzz;

import clojure.lang.IPersistentMap;
import clojure.lang.PersistentVector;
import clojure.lang.Util;
import com.code_intelligence.jazzer.junit.FuzzTest;
import herald.http.codec.FormDecoder;
import herald.http.codec.TooManyParamsException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Fuzzes {@link FormDecoder} on raw {@code application/x-www-form-urlencoded} bodies (UTF-8): it agrees with a
 * small model of its documented rules (pairs split on {@code &}, the first {@code =} splits key from value, empty
 * pairs and empty keys skipped, {@code +} a space, {@code %XX} a byte, a bad escape kept literally, bytes invalid in
 * UTF-8 become U+FFFD, a repeated key a vector), never holds a lone surrogate, throws nothing but
 * {@link TooManyParamsException} and that only past the limit; on ASCII input the query-string entry agrees.
 */
class FormDecoderFuzzTest {
    private static final int MAX_PARAMS = 16;

    @FuzzTest(maxDuration = "2m")
    void decode(byte[] data) {
        Map<String, Object> model = model(data);
        IPersistentMap got;
        try {
            got = FormDecoder.decode(data, 0, data.length, StandardCharsets.UTF_8, MAX_PARAMS);
        } catch (TooManyParamsException e) {
            if (pairs(data) <= MAX_PARAMS) {
                throw new AssertionError("TooManyParamsException for " + pairs(data) + " pairs", e);
            }
            return;
        }
        if (pairs(data) > MAX_PARAMS) {
            throw new AssertionError(pairs(data) + " pairs decoded without TooManyParamsException");
        }
        if (!Util.equiv(got, clojure.lang.PersistentArrayMap.create(model))) {
            throw new AssertionError("decoded " + got + ", the model says " + model);
        }
        for (Object e : got) {
            String s = e.toString();
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (Character.isSurrogate(c) && !(Character.isHighSurrogate(c) && i + 1 < s.length()
                    && Character.isLowSurrogate(s.charAt(i + 1)) && i++ >= 0)) {
                    throw new AssertionError("a lone surrogate in " + s);
                }
            }
        }
        if (ascii(data)) {
            IPersistentMap text = FormDecoder.decode(new String(data, StandardCharsets.US_ASCII), StandardCharsets.UTF_8,
                MAX_PARAMS);
            if (!Util.equiv(got, text)) {
                throw new AssertionError("bytes decoded to " + got + ", the same text to " + text);
            }
        }
    }

    private static boolean ascii(byte[] data) {
        for (byte b : data) {
            if (b < 0) {
                return false;
            }
        }
        return true;
    }

    /** The pairs that count against the limit: non-empty, with a non-empty key. */
    private static int pairs(byte[] data) {
        int n = 0;
        for (String pair : new String(data, StandardCharsets.ISO_8859_1).split("&", -1)) {
            if (!pair.isEmpty() && pair.charAt(0) != '=') {
                n++;
            }
        }
        return n;
    }

    private static Map<String, Object> model(byte[] data) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (data.length == 0) {
            return m;
        }
        for (String pair : new String(data, StandardCharsets.ISO_8859_1).split("&", -1)) {
            int eq = pair.indexOf('=');
            if (pair.isEmpty() || eq == 0) {
                continue;
            }
            String k = unescape(eq < 0 ? pair : pair.substring(0, eq));
            String v = eq < 0 ? "" : unescape(pair.substring(eq + 1));
            Object old = m.get(k);
            m.put(k, old == null ? v : old instanceof PersistentVector pv ? pv.cons(v) : PersistentVector.create(old, v));
        }
        return m;
    }

    private static String unescape(String s) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '+') {
                out.write(' ');
            } else if (c == '%' && i + 2 < s.length() && Character.digit(s.charAt(i + 1), 16) >= 0
                && Character.digit(s.charAt(i + 2), 16) >= 0 && s.charAt(i + 1) < 128 && s.charAt(i + 2) < 128) {
                out.write(Integer.parseInt(s.substring(i + 1, i + 3), 16));
                i += 2;
            } else {
                out.write(c); // ISO-8859-1: the byte itself
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
