package herald.http.http2;

import herald.http.server.HeadChecks;
import herald.http.server.KeepAlive;
import herald.http.server.Refusal;
import herald.http.server.RequestHead;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.util.AsciiString;
import java.util.Iterator;
import java.util.Map;

/**
 * Turns a stream's HEADERS into the request head the exchange handler reads: pseudo-headers become the method and
 * target, {@code :authority} becomes {@code host} when the client sent no Host, other fields are copied as sent
 * (HTTP/2 field names are lower-case already). The version is {@link #VERSION}, whose text is "HTTP/2.0".
 */
public final class Http2Request {
    /**
     * The request version of every HTTP/2 request: {@code text()} is "HTTP/2.0" (the Ring {@code :protocol}); it
     * keeps HTTP/1.1 semantics for the exchange handler (persistent, Host checked), which compares it by identity.
     */
    public static final HttpVersion VERSION = new HttpVersion("HTTP", 1, 1, true) {
        @Override
        public String text() {
            return "HTTP/2.0";
        }

        @Override
        public String toString() {
            return "HTTP/2.0";
        }
    };

    // names were validated by the HTTP/2 codec; values only for NUL, CR and LF, as on HTTP/1.1
    private static final HttpHeadersFactory HEADERS = DefaultHttpHeadersFactory.headersFactory()
        .withNameValidation(false);

    private static final AsciiString SLASH = AsciiString.cached("/");

    private Http2Request() {}

    /**
     * The request head of {@code h}, checked as {@code Http1Parser} checks an HTTP/1.1 head: refused 400 when the
     * method or path cannot be served, 414 for a path over {@code maxTargetBytes}, 501 for CONNECT, a lower-case
     * method or a transfer coding other than chunked, 400 for an invalid Host or target. The path stays the bytes
     * HPACK decoded it into. With {@code endStream} the head is the whole request ({@link RequestHead#full}).
     */
    public static RequestHead of(Http2Headers h, int maxTargetBytes, boolean endStream) {
        CharSequence method = h.method();
        CharSequence path = h.path();
        HttpMethod m;
        HttpHeaders hs = HEADERS.newHeaders();
        try {
            m = method == null ? HttpMethod.GET : HttpMethod.valueOf(method.toString());
            copy(h, hs);
        } catch (IllegalArgumentException bad) {
            return new RequestHead(HttpMethod.GET, VERSION, HEADERS.newHeaders(), SLASH.array(), SLASH.arrayOffset(),
                SLASH.arrayOffset() + 1, -1, "/", null, Refusal.BAD_REQUEST, false, true, endStream);
        }
        AsciiString target = path == null ? SLASH : AsciiString.of(path);
        Refusal why = null;
        if (method == null || path == null && !HttpMethod.CONNECT.equals(m)) {
            why = Refusal.BAD_REQUEST; // missing :method or :path
        } else if (path != null && path.length() > maxTargetBytes) {
            why = Refusal.REQUEST_LINE_TOO_LONG;
        }
        String uri = target.toString();
        if (why == null) {
            why = HeadChecks.methodRefusal(m);
        }
        if (why == null) {
            why = HeadChecks.hostRefusal(hs, false);
        }
        if (why == null) {
            why = HeadChecks.targetRefusal(m, uri);
        }
        if (why == null) {
            why = HeadChecks.codingRefusal(hs.get(HttpHeaderNames.TRANSFER_ENCODING));
        }
        String host = hs.get(HttpHeaderNames.HOST);
        int q = queryAt(target);
        return new RequestHead(m, VERSION, hs, target.array(), target.arrayOffset(),
            target.arrayOffset() + target.length(), q, q < 0 ? uri : null, host == null ? null
            : HeadChecks.hostName(host), why, false, KeepAlive.of(VERSION, hs.get(HttpHeaderNames.CONNECTION)), endStream);
    }

    /** The index of the first '?' of {@code target} in its array, or -1. */
    private static int queryAt(AsciiString target) {
        int q = target.indexOf('?', 0);
        return q < 0 ? -1 : target.arrayOffset() + q;
    }

    /**
     * The request's pseudo-headers are those RFC 9113 8.3.1 requires: {@code :method}; {@code :scheme} and a
     * {@code :path} that starts with "/" (or is "*" on OPTIONS), except on CONNECT, which needs {@code :authority}
     * instead. A request without them is malformed (8.1.1): its stream is reset with PROTOCOL_ERROR. (Netty's own
     * check, {@code validateRequiredPseudoHeaders}, runs before the stream-state checks and so answers a second
     * HEADERS on a half-closed stream with PROTOCOL_ERROR instead of STREAM_CLOSED.)
     */
    static boolean wellFormed(Http2Headers h) {
        CharSequence method = h.method();
        if (method == null) {
            return false;
        }
        if (HttpMethod.CONNECT.asciiName().contentEquals(method)) {
            return h.authority() != null;
        }
        CharSequence path = h.path();
        if (h.scheme() == null || path == null || path.isEmpty()) {
            return false;
        }
        return path.charAt(0) == '/'
            || path.length() == 1 && path.charAt(0) == '*' && HttpMethod.OPTIONS.asciiName().contentEquals(method);
    }

    private static void copy(Http2Headers h, HttpHeaders out) {
        for (Iterator<Map.Entry<CharSequence, CharSequence>> it = h.iterator(); it.hasNext(); ) {
            Map.Entry<CharSequence, CharSequence> e = it.next();
            CharSequence name = e.getKey();
            if (name.length() > 0 && name.charAt(0) != ':') {
                out.add(name, e.getValue());
            }
        }
        CharSequence authority = h.authority();
        if (authority != null && !out.contains(HttpHeaderNames.HOST)) {
            out.add(HttpHeaderNames.HOST, authority);
        }
    }
}
