package herald.http.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/**
 * A request head parsed by {@link Http1Parser}, checked in the same pass: {@link #status} is 0 (proceed), 100
 * (proceed after "100 Continue") or the status to refuse it with. The request-target stays bytes until read;
 * {@link #path} and {@link #query} give Ring's {@code :uri} and {@code :query-string} without building the whole
 * target. A request without a body is a {@link Full} one, so it travels the pipeline as one message.
 */
class Http1Request implements HttpRequest {
    private static final byte[] NONE = new byte[0];

    private HttpMethod method;
    private HttpVersion version;
    private String uri;
    private DecoderResult result = DecoderResult.SUCCESS;
    final HttpHeaders headers;
    final byte[] b;
    /** The request-target in {@link #b}: [targetStart, targetEnd), with its first '?' at queryAt (-1: none). */
    final int targetStart;
    final int targetEnd;
    final int queryAt;
    /** 0, 100 or the refusal status. */
    final int status;
    /** Absolute-form target ({@code http://h/p}): the server takes Host from it. */
    final boolean absolute;
    final boolean keepAlive;
    /** The Host value without its port (Ring's :server-name), or null without Host. */
    final String serverName;

    Http1Request(HttpMethod method, HttpVersion version, HttpHeaders headers, byte[] b, int targetStart,
                 int targetEnd, int queryAt, int status, Refusal why, boolean absolute, boolean keepAlive,
                 String serverName) {
        this.method = method;
        this.version = version;
        this.headers = headers;
        this.b = b;
        this.targetStart = targetStart;
        this.targetEnd = targetEnd;
        this.queryAt = queryAt;
        this.status = status;
        this.absolute = absolute;
        this.keepAlive = keepAlive;
        this.serverName = serverName;
        if (status > 100) {
            result = DecoderResult.failure(new Http1Exception(why != null ? why : Refusal.of(status)));
        }
    }

    /** A head refused before it could be parsed (a broken request line, over a limit). */
    static Http1Request refused(Refusal why) {
        return new Full(HttpMethod.GET, HttpVersion.HTTP_1_1, EmptyHttpHeaders.INSTANCE, NONE, 0, 0, -1, why.status,
            why, false, false, null);
    }

    /** Ring's {@code :uri}, when the parser already has it as a String. */
    String path;

    /** Ring's {@code :uri} of an origin-form target: the path before '?'. */
    String path() {
        if (path != null) {
            return path;
        }
        int end = queryAt >= 0 ? queryAt : targetEnd;
        if (uri != null && end == targetEnd) {
            return uri;
        }
        return new String(b, targetStart, end - targetStart, StandardCharsets.ISO_8859_1);
    }

    /** Ring's {@code :query-string}: after the first '?', or null without one. */
    String query() {
        return queryAt < 0 ? null : new String(b, queryAt + 1, targetEnd - queryAt - 1, StandardCharsets.ISO_8859_1);
    }

    @Override
    public HttpMethod method() {
        return method;
    }

    @Override
    @Deprecated
    public HttpMethod getMethod() {
        return method;
    }

    @Override
    public HttpRequest setMethod(HttpMethod m) {
        method = m;
        return this;
    }

    @Override
    public String uri() {
        String u = uri;
        if (u == null) {
            u = new String(b, targetStart, targetEnd - targetStart, StandardCharsets.ISO_8859_1);
            uri = u;
        }
        return u;
    }

    @Override
    @Deprecated
    public String getUri() {
        return uri();
    }

    @Override
    public HttpRequest setUri(String u) {
        uri = u;
        return this;
    }

    @Override
    public HttpVersion protocolVersion() {
        return version;
    }

    @Override
    @Deprecated
    public HttpVersion getProtocolVersion() {
        return version;
    }

    @Override
    public HttpRequest setProtocolVersion(HttpVersion v) {
        version = v;
        return this;
    }

    @Override
    public HttpHeaders headers() {
        return headers;
    }

    @Override
    public DecoderResult decoderResult() {
        return result;
    }

    @Override
    @Deprecated
    public DecoderResult getDecoderResult() {
        return result;
    }

    @Override
    public void setDecoderResult(DecoderResult r) {
        result = r;
    }

    @Override
    public String toString() {
        return method + " " + uri() + " " + version + (status != 0 ? " (status " + status + ")" : "");
    }

    /** A head with no body: the request and its (empty) last content in one message. */
    static final class Full extends Http1Request implements FullHttpRequest {
        Full(HttpMethod method, HttpVersion version, HttpHeaders headers, byte[] b, int targetStart, int targetEnd,
             int queryAt, int status, Refusal why, boolean absolute, boolean keepAlive, String serverName) {
            super(method, version, headers, b, targetStart, targetEnd, queryAt, status, why, absolute, keepAlive,
                serverName);
        }

        @Override
        public ByteBuf content() {
            return Unpooled.EMPTY_BUFFER;
        }

        @Override
        public HttpHeaders trailingHeaders() {
            return EmptyHttpHeaders.INSTANCE;
        }

        @Override
        public FullHttpRequest copy() {
            return this;
        }

        @Override
        public FullHttpRequest duplicate() {
            return this;
        }

        @Override
        public FullHttpRequest retainedDuplicate() {
            return this;
        }

        @Override
        public FullHttpRequest replace(ByteBuf content) {
            DefaultFullHttpRequest r = new DefaultFullHttpRequest(protocolVersion(), method(), uri(), content,
                headers, EmptyHttpHeaders.INSTANCE);
            r.setDecoderResult(decoderResult());
            return r;
        }

        @Override
        public int refCnt() {
            return 1;
        }

        @Override
        public FullHttpRequest retain() {
            return this;
        }

        @Override
        public FullHttpRequest retain(int increment) {
            return this;
        }

        @Override
        public FullHttpRequest touch() {
            return this;
        }

        @Override
        public FullHttpRequest touch(Object hint) {
            return this;
        }

        @Override
        public boolean release() {
            return false;
        }

        @Override
        public boolean release(int decrement) {
            return false;
        }

        @Override
        public FullHttpRequest setProtocolVersion(HttpVersion v) {
            super.setProtocolVersion(v);
            return this;
        }

        @Override
        public FullHttpRequest setMethod(HttpMethod m) {
            super.setMethod(m);
            return this;
        }

        @Override
        public FullHttpRequest setUri(String u) {
            super.setUri(u);
            return this;
        }
    }
}
