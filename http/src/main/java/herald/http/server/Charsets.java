package herald.http.server;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;

/** The charset named by a Content-Type's {@code charset=} parameter, UTF-8 when absent or unknown. */
final class Charsets {
    private static final ConcurrentHashMap<String, Charset> CACHE = new ConcurrentHashMap<>();

    private Charsets() {}

    static Charset of(String contentType) {
        if (contentType == null) {
            return StandardCharsets.UTF_8;
        }
        if (contentType.indexOf('=') < 0) {
            return StandardCharsets.UTF_8;
        }
        int i = indexOfCharset(contentType);
        if (i < 0) {
            return StandardCharsets.UTF_8;
        }
        int end = contentType.indexOf(';', i);
        String name = (end < 0 ? contentType.substring(i) : contentType.substring(i, end)).trim();
        if (name.length() > 1 && name.charAt(0) == '"' && name.charAt(name.length() - 1) == '"') {
            name = name.substring(1, name.length() - 1);
        }
        if (name.equalsIgnoreCase("utf-8")) {
            return StandardCharsets.UTF_8;
        }
        return CACHE.computeIfAbsent(name, Charsets::lookup);
    }

    private static Charset lookup(String name) {
        try {
            return Charset.forName(name);
        } catch (RuntimeException e) {
            return StandardCharsets.UTF_8;
        }
    }

    private static int indexOfCharset(String ct) {
        int n = ct.length() - 8;
        for (int i = 0; i <= n; i++) {
            if (ct.regionMatches(true, i, "charset=", 0, 8)) {
                return i + 8;
            }
        }
        return -1;
    }
}
