package herald.http.server;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import java.util.List;

/** Checks of a request head both codecs make (RFC 9110, RFC 9112, RFC 9113 8.3.1). */
public final class HeadChecks {
    private HeadChecks() {
    }

    /**
     * Null for a method the handler may see; 501 for CONNECT (herald is not a proxy) and for a method holding a
     * lower-case letter: {@code get} is not GET (RFC 9110 9.1), and Ring would lower-case both to {@code :get}.
     */
    public static Refusal methodRefusal(HttpMethod m) {
        if (m == HttpMethod.GET || m == HttpMethod.POST || m == HttpMethod.PUT || m == HttpMethod.DELETE
                || m == HttpMethod.HEAD || m == HttpMethod.OPTIONS || m == HttpMethod.PATCH
                || m == HttpMethod.TRACE) {
            return null;
        }
        if (m == HttpMethod.CONNECT) {
            return Refusal.CONNECT_METHOD;
        }
        String name = m.name();
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c >= 'a' && c <= 'z') {
                return Refusal.LOWERCASE_METHOD;
            }
        }
        return null;
    }

    /**
     * Null when Host is valid; 400 when HTTP/1.1 ({@code required}) has none, when there are several, or when its
     * value is not {@code uri-host [":" port]} (RFC 9112 3.2, RFC 3986 3.2.2: no space, '/', '@', ...).
     */
    public static Refusal hostRefusal(HttpHeaders hs, boolean required) {
        String host = hs.get(HttpHeaderNames.HOST);
        if (host == null) {
            return required ? Refusal.MISSING_HOST : null;
        }
        if (!validAuthority(host, 0, host.length(), true)) {
            return Refusal.BAD_HOST;
        }
        List<String> all = hs.getAll(HttpHeaderNames.HOST);
        return all.size() > 1 ? Refusal.DUPLICATE_HOST : null;
    }

    /**
     * Null for origin-form ({@code /...}), absolute-form ({@code http://authority...} or https, RFC 9112 3.2.2) and
     * {@code *} with OPTIONS (3.2.4); else 400, and 400 for any target holding {@code #} (a fragment is never
     * sent), a control character, a space or a byte beyond ASCII (RFC 9112 3.2, RFC 3986).
     */
    public static Refusal targetRefusal(HttpMethod m, String uri) {
        for (int i = 0; i < uri.length(); i++) {
            char c = uri.charAt(i);
            if (c >= 0x80) {
                return Refusal.NON_ASCII_TARGET;
            }
            if (c <= 0x20 || c == 0x7f) {
                return c == ' ' ? Refusal.BAD_REQUEST_LINE : Refusal.CONTROL_IN_TARGET;
            }
            if (c == '#') {
                return Refusal.FRAGMENT_IN_TARGET;
            }
        }
        if (!uri.isEmpty() && uri.charAt(0) == '/') {
            return null;
        }
        if (uri.equals("*")) {
            return m == HttpMethod.OPTIONS ? null : Refusal.BAD_TARGET_FORM;
        }
        int start = schemeEnd(uri);
        if (start < 0) {
            return Refusal.BAD_TARGET_FORM;
        }
        int end = start;
        while (end < uri.length() && uri.charAt(end) != '/' && uri.charAt(end) != '?') {
            end++;
        }
        return end > start && validAuthority(uri, start, end, false) ? null : Refusal.BAD_TARGET_FORM;
    }

    /** Ring's server name of a valid Host value (or authority): without its port; an IP-literal keeps its brackets. */
    public static String hostName(String host) {
        if (host.isEmpty()) {
            return host;
        }
        if (host.charAt(0) == '[') {
            int close = host.indexOf(']');
            return close > 0 ? host.substring(0, close + 1) : host;
        }
        int colon = host.lastIndexOf(':');
        return colon >= 0 ? host.substring(0, colon) : host;
    }

    /** Null without Transfer-Encoding or with exactly {@code chunked}; 501 for a coding herald does not decode. */
    public static Refusal codingRefusal(String te) {
        return te == null || te.trim().equalsIgnoreCase("chunked") ? null : Refusal.UNSUPPORTED_CODING;
    }

    /** The index after {@code http://} or {@code https://} (any case), else -1. */
    private static int schemeEnd(String uri) {
        if (uri.regionMatches(true, 0, "http://", 0, 7)) {
            return 7;
        }
        return uri.regionMatches(true, 0, "https://", 0, 8) ? 8 : -1;
    }

    /**
     * Whether {@code s[from, to)} is a host with an optional port: reg-name or IPv4 characters (unreserved,
     * pct-encoded, sub-delims) or an IP-literal in brackets, then {@code :digits}. Empty is valid for Host only.
     */
    public static boolean validAuthority(String s, int from, int to, boolean emptyOk) {
        if (from == to) {
            return emptyOk;
        }
        int i = from;
        if (s.charAt(i) == '[') {
            int close = s.indexOf(']', i);
            if (close < 0 || close >= to) {
                return false;
            }
            for (int j = i + 1; j < close; j++) {
                char c = s.charAt(j);
                if (!(hex(c) || c == ':' || c == '.')) {
                    return false;
                }
            }
            i = close + 1;
        } else {
            while (i < to && s.charAt(i) != ':') {
                if (!regName(s.charAt(i))) {
                    return false;
                }
                i++;
            }
        }
        if (i == to) {
            return true;
        }
        if (s.charAt(i) != ':') {
            return false;
        }
        for (int j = i + 1; j < to; j++) {
            char c = s.charAt(j);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    private static boolean hex(char c) {
        return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F';
    }

    private static boolean regName(char c) {
        if (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
            return true;
        }
        return switch (c) {
            case '-', '.', '_', '~', '%', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=' -> true;
            default -> false;
        };
    }
}
