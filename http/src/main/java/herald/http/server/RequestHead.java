package herald.http.server;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import java.util.List;

/** Checks of a decoded request head that Netty's decoder leaves to the server (RFC 9110 / RFC 9112). */
final class RequestHead {
    private RequestHead() {
    }

    /**
     * 0 for a method the handler may see; 501 for CONNECT (herald is not a proxy) and for a method holding a
     * lower-case letter: {@code get} is not GET (RFC 9110 9.1), and Ring would lower-case both to {@code :get}.
     */
    static int methodStatus(HttpMethod m) {
        if (m == HttpMethod.GET || m == HttpMethod.POST || m == HttpMethod.PUT || m == HttpMethod.DELETE
                || m == HttpMethod.HEAD || m == HttpMethod.OPTIONS || m == HttpMethod.PATCH
                || m == HttpMethod.TRACE) {
            return 0;
        }
        if (m == HttpMethod.CONNECT) {
            return 501;
        }
        String name = m.name();
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c >= 'a' && c <= 'z') {
                return 501;
            }
        }
        return 0;
    }

    /**
     * 0 when Host is valid; 400 when HTTP/1.1 ({@code required}) has none, when there are several, or when its
     * value is not {@code uri-host [":" port]} (RFC 9112 3.2, RFC 3986 3.2.2: no space, '/', '@', ...).
     */
    static int hostStatus(HttpHeaders hs, boolean required) {
        String host = hs.get(HttpHeaderNames.HOST);
        if (host == null) {
            return required ? 400 : 0;
        }
        if (!validAuthority(host, 0, host.length(), true)) {
            return 400;
        }
        List<String> all = hs.getAll(HttpHeaderNames.HOST);
        return all.size() > 1 ? 400 : 0;
    }

    /**
     * 0 for origin-form ({@code /...}), absolute-form ({@code http://authority...} or https, RFC 9112 3.2.2) and
     * {@code *} with OPTIONS (3.2.4); else 400, and 400 for any target holding {@code #} (a fragment is never sent).
     */
    static int targetStatus(HttpMethod m, String uri) {
        for (int i = 0; i < uri.length(); i++) {
            char c = uri.charAt(i);
            if (c <= 0x20 || c >= 0x7f || c == '#') {
                return 400; // RFC 9112 3.2 / RFC 3986: visible ASCII only, no fragment
            }
        }
        if (!uri.isEmpty() && uri.charAt(0) == '/') {
            return 0;
        }
        if (uri.equals("*")) {
            return m == HttpMethod.OPTIONS ? 0 : 400;
        }
        int start = schemeEnd(uri);
        if (start < 0) {
            return 400;
        }
        int end = start;
        while (end < uri.length() && uri.charAt(end) != '/' && uri.charAt(end) != '?') {
            end++;
        }
        return end > start && validAuthority(uri, start, end, false) ? 0 : 400;
    }

    /**
     * For an absolute-form target ({@code http://h/p}): sets Host to the target's authority, which the server
     * uses instead of the received Host (RFC 9112 3.2.2); {@code :uri} is then the path ({@code RingRequest}).
     */
    static void useTargetHost(HttpRequest r) {
        String uri = r.uri();
        int start = schemeEnd(uri);
        if (start < 0) {
            return;
        }
        int end = start;
        while (end < uri.length() && uri.charAt(end) != '/' && uri.charAt(end) != '?') {
            end++;
        }
        r.headers().set(HttpHeaderNames.HOST, uri.substring(start, end));
    }

    /** 0 without Transfer-Encoding or with exactly {@code chunked}; 501 for a coding herald does not decode. */
    static int codingStatus(String te) {
        return te == null || te.trim().equalsIgnoreCase("chunked") ? 0 : 501;
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
    static boolean validAuthority(String s, int from, int to, boolean emptyOk) {
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
