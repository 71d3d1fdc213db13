package herald.json.fuzz;

import clojure.lang.Util;
import com.code_intelligence.jazzer.junit.FuzzTest;
import herald.json.JsonReader;
import herald.json.JsonWriter;
import herald.json.MalformedJsonException;
import java.util.Arrays;

/**
 * Fuzzes {@link JsonReader} on raw bytes, with the default reader and a strict one (BigDecimals, duplicate keys
 * refused, small depth and string limits): the only exception is {@link MalformedJsonException}; whatever is read
 * round-trips through {@link JsonWriter} (written, read again: the same JSON value, numbers compared by value;
 * written again: the same bytes).
 */
class JsonReaderFuzzTest {
    private static final JsonReader STRICT = new JsonReader(JsonReader.Keys.STRINGS, null, true, true, 8, 64);

    @FuzzTest(maxDuration = "2m")
    void read(byte[] data) {
        check(JsonReader.DEFAULT, data);
        check(STRICT, data);
    }

    /**
     * The same JSON value: numbers compared by value ({@code ==}: JSON has one number type, so {@code 1111e0} read as
     * a BigDecimal and written as {@code 1111} reads back as a Long), everything else by Clojure's {@code =}.
     */
    static boolean sameJson(Object a, Object b) {
        if (a instanceof Number x && b instanceof Number y) {
            return clojure.lang.Numbers.equiv(x, y);
        }
        if (a instanceof java.util.Map<?, ?> m && b instanceof java.util.Map<?, ?> n) {
            return m.size() == n.size() && m.entrySet().stream()
                .allMatch(e -> n.containsKey(e.getKey()) && sameJson(e.getValue(), n.get(e.getKey())));
        }
        if (a instanceof java.util.List<?> l && b instanceof java.util.List<?> k) {
            if (l.size() != k.size()) {
                return false;
            }
            for (int i = 0; i < l.size(); i++) {
                if (!sameJson(l.get(i), k.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return Util.equiv(a, b);
    }

    private static void check(JsonReader reader, byte[] data) {
        Object v;
        try {
            v = reader.read(data, 0, data.length);
        } catch (MalformedJsonException e) {
            return; // the documented error
        }
        byte[] written = JsonWriter.DEFAULT.writeBytes(v);
        Object again = reader.read(written, 0, written.length);
        if (!sameJson(v, again)) {
            throw new AssertionError("read " + v + ", wrote " + new String(written, java.nio.charset.StandardCharsets.UTF_8)
                + ", read back " + again);
        }
        byte[] rewritten = JsonWriter.DEFAULT.writeBytes(again);
        if (!Arrays.equals(written, rewritten)) {
            throw new AssertionError("writing is not stable: " + new String(written, java.nio.charset.StandardCharsets.UTF_8)
                + " then " + new String(rewritten, java.nio.charset.StandardCharsets.UTF_8));
        }
    }
}
