package herald.http.server;

import io.netty.handler.codec.http.HttpVersion;

/** Keep-alive from the request's version and Connection header (one lookup, no allocation). */
public final class KeepAlive {
    private KeepAlive() {}

    /** HTTP/1.1: unless "close"; HTTP/1.0: only with "keep-alive". */
    public static boolean of(HttpVersion version, String connection) {
        if (connection == null) {
            return version.isKeepAliveDefault();
        }
        if (version.isKeepAliveDefault()) {
            return !containsToken(connection, "close");
        }
        return containsToken(connection, "keep-alive");
    }

    private static boolean containsToken(String header, String token) {
        int n = header.length();
        int t = token.length();
        for (int i = 0; i + t <= n; i++) {
            if (header.regionMatches(true, i, token, 0, t)
                && (i == 0 || header.charAt(i - 1) == ',' || header.charAt(i - 1) == ' ')
                && (i + t == n || header.charAt(i + t) == ',' || header.charAt(i + t) == ' ')) {
                return true;
            }
        }
        return false;
    }

}
