package herald.http.http2;

import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.codec.http2.Http2Headers;
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

    private Http2Request() {}

    /** The request head of {@code h}; a decoder failure (400, or 414 for a long path) when it cannot be served. */
    public static HttpRequest of(Http2Headers h, int maxTargetBytes) {
        CharSequence method = h.method();
        CharSequence path = h.path();
        DefaultHttpRequest r;
        try {
            r = new DefaultHttpRequest(VERSION, method == null ? HttpMethod.GET : HttpMethod.valueOf(method.toString()),
                path == null ? "/" : path.toString(), HEADERS);
            copy(h, r.headers());
        } catch (IllegalArgumentException bad) {
            r = new DefaultHttpRequest(VERSION, HttpMethod.GET, "/", HEADERS);
            r.setDecoderResult(DecoderResult.failure(bad));
            return r;
        }
        if (method == null || path == null && !HttpMethod.CONNECT.equals(r.method())) {
            r.setDecoderResult(DecoderResult.failure(new IllegalArgumentException("missing :method or :path")));
        } else if (path != null && path.length() > maxTargetBytes) {
            r.setDecoderResult(DecoderResult.failure(new TooLongHttpLineException(":path is longer than "
                + maxTargetBytes + " bytes")));
        }
        return r;
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
