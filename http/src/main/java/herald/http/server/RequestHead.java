package herald.http.server;

import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;

/**
 * A request head as both codecs give it to the server (HTTP/1.1's {@code herald.http.http1.Http1Decoder}, HTTP/2's
 * {@code herald.http.http2.Http2Request}), already checked: {@link #refusal} is null (proceed) or why the server
 * answers it itself. The request-target stays bytes until read ({@link #path}, {@link #query}, {@link #uri}); the
 * headers are the codec's own ({@link ParsedHeaders} over the head's bytes on HTTP/1.1). Once the connection has it
 * ({@link #arrivedOn}), the head also answers Ring's connection facts: {@link #serverPort}, {@link #serverName},
 * {@link #remoteAddr}, {@link #https}, {@link #clientCert}. One message in the pipeline; a {@link #full} head has no
 * body (no content follows it).
 */
public final class RequestHead {
    private static final byte[] NONE = new byte[0];
    private static final AsciiString X_FORWARDED_FOR = AsciiString.cached("x-forwarded-for");
    private static final AsciiString X_FORWARDED_PROTO = AsciiString.cached("x-forwarded-proto");

    private final HttpMethod method;
    private final HttpVersion version;
    private final HttpHeaders headers;
    /** The request-target is {@code target[targetStart, targetEnd)}, its first '?' at queryAt (-1: none). */
    private final byte[] target;
    private final int targetStart;
    private final int targetEnd;
    private final int queryAt;
    /** The whole target as a String, once read; Ring's {@code :uri}, when the codec has it or once read. */
    private String uri;
    private String path;
    /** The Host (or the absolute-form target's authority) without its port; null or empty: none. */
    private final String hostName;
    /** Why the server answers this head itself; null when it may proceed. */
    final Refusal refusal;
    /** {@code Expect: 100-continue} on HTTP/1.1: "100 Continue" goes out before the body is read. */
    final boolean expectContinue;
    final boolean keepAlive;
    /** No body follows: the head is the whole request. */
    final boolean full;
    /** The connection it arrived on; null until {@link #arrivedOn}. */
    private ConnectionInfo conn;

    /**
     * A head: {@code target[targetStart, targetEnd)} is the request-target (kept, not copied), {@code queryAt} its
     * first '?' (-1: none); {@code path} is Ring's {@code :uri} when the codec has it already (null: the bytes before
     * '?' when read); {@code hostName} the Host without its port (null: none).
     */
    public RequestHead(HttpMethod method, HttpVersion version, HttpHeaders headers, byte[] target, int targetStart,
                       int targetEnd, int queryAt, String path, String hostName, Refusal refusal,
                       boolean expectContinue, boolean keepAlive, boolean full) {
        this.method = method;
        this.version = version;
        this.headers = headers;
        this.target = target;
        this.targetStart = targetStart;
        this.targetEnd = targetEnd;
        this.queryAt = queryAt;
        this.path = path;
        this.hostName = hostName;
        this.refusal = refusal;
        this.expectContinue = expectContinue;
        this.keepAlive = keepAlive;
        this.full = full;
    }

    /** A head refused before it could be parsed (a broken request line, over a limit, a timeout): GET, no target. */
    public static RequestHead refused(Refusal why) {
        return new RequestHead(HttpMethod.GET, HttpVersion.HTTP_1_1, EmptyHttpHeaders.INSTANCE, NONE, 0, 0, -1, null, null, why, false,
            false, true);
    }

    public HttpMethod method() {
        return method;
    }

    /** The version; an HTTP/2 stream's is {@code Http2Request.VERSION}, whose text is "HTTP/2.0". */
    public HttpVersion version() {
        return version;
    }

    public HttpHeaders headers() {
        return headers;
    }

    /** The request-target as received (empty for a head refused before its request line was read). */
    public String uri() {
        String u = uri;
        if (u == null) {
            u = new String(target, targetStart, targetEnd - targetStart, StandardCharsets.ISO_8859_1);
            uri = u;
        }
        return u;
    }

    /** Ring's {@code :uri}: the path before '?' (after the authority of an absolute-form target). */
    public String path() {
        String p = path;
        if (p == null) {
            int end = queryAt >= 0 ? queryAt : targetEnd;
            p = end == targetEnd && uri != null ? uri
                : new String(target, targetStart, end - targetStart, StandardCharsets.ISO_8859_1);
            path = p;
        }
        return p;
    }

    /** Ring's {@code :query-string}: the target after its first '?', or null without one. */
    public String query() {
        return queryAt < 0 ? null
            : new String(target, queryAt + 1, targetEnd - queryAt - 1, StandardCharsets.ISO_8859_1);
    }

    /** The server refuses the head itself with this; null when it may proceed. */
    public Refusal refusal() {
        return refusal;
    }

    /** No body follows the head. */
    public boolean full() {
        return full;
    }

    /** 0 to proceed, 100 to proceed after "100 Continue", else the status of {@link #refusal}. */
    public int status() {
        return refusal != null ? refusal.status : expectContinue ? 100 : 0;
    }

    /** The connection may carry another request after this one (version and Connection header). */
    public boolean keepAlive() {
        return keepAlive;
    }

    /** The Host (or an absolute-form target's authority) without its port; null or empty: none. */
    public String hostName() {
        return hostName;
    }

    /** The connection's facts for the Ring keys below (set once, by the connection the head arrived on). */
    void arrivedOn(ConnectionInfo c) {
        conn = c;
    }

    /** Ring's {@code :server-port}. */
    Integer serverPort() {
        return conn.serverPort;
    }

    /** Ring's {@code :server-name}: the Host without its port, else the connection's local address. */
    String serverName() {
        String name = hostName;
        return name == null || name.isEmpty() ? conn.localAddr : name;
    }

    /** Ring's {@code :remote-addr}: the peer, or behind a proxy ({@code :proxy?}) the first X-Forwarded-For. */
    String remoteAddr() {
        String xff = conn.proxy ? headers.get(X_FORWARDED_FOR) : null;
        if (xff == null) {
            return conn.remoteAddr;
        }
        int comma = xff.indexOf(',');
        return (comma < 0 ? xff : xff.substring(0, comma)).trim();
    }

    /** Ring's {@code :scheme} is https: over TLS, or behind a proxy that says so in X-Forwarded-Proto. */
    boolean https() {
        return conn.tls != null || conn.proxy && "https".equalsIgnoreCase(headers.get(X_FORWARDED_PROTO));
    }

    /** Ring's {@code :ssl-client-cert}: the client's certificate over TLS, else null. */
    X509Certificate clientCert() {
        return conn.tls != null ? conn.clientCert() : null;
    }

    @Override
    public String toString() {
        return method + " " + uri() + " " + version + (refusal != null ? " (refused " + refusal.status + ")" : "");
    }
}
