package herald.http.server;

import static herald.http.server.RingKeys.*;

import clojure.lang.ILookup;
import clojure.lang.ISeq;
import clojure.lang.RT;
import herald.http.exception.InvalidResponseException;
import herald.http.http2.Http2Request;
import herald.http.http2.ResponseHeaders;
import herald.http.websocket.WebSocketUpgrade;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.DefaultFileRegion;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.handler.stream.ChunkedFile;
import io.netty.handler.stream.ChunkedStream;
import io.netty.handler.codec.http.HttpVersion;
import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.InputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** Writes a Ring response: fixed bodies in one buffer, files zero-copy, streams chunked off the event loop. */
final class ResponseWriter {
    private static final byte[] CONTENT_LENGTH = ascii("Content-Length: ");
    private static final byte[] CHUNKED = ascii("Transfer-Encoding: chunked\r\n");
    private static final byte[] CLOSE = ascii("Connection: close\r\n");
    private static final byte[] KEEP_ALIVE = ascii("Connection: keep-alive\r\n");
    private static final byte[] TEXT_PLAIN = ascii("Content-Type: text/plain; charset=utf-8\r\n");
    private static final byte[] RETRY_AFTER = ascii("Retry-After: 1\r\n");

    private ResponseWriter() {}

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** The sink for {@code ex}: HTTP/2 frames for a request that came on an HTTP/2 stream, else HTTP/1.1 bytes. */
    static Sink sink(Exchange ex) {
        return ex.request != null && ex.request.protocolVersion() == Http2Request.VERSION ? H2 : H1;
    }

    /** Writes the handler's answer (or a 500 when it failed or is not a valid response). */
    static void write(HttpConnection c, Exchange ex) {
        ServerContext server = c.server;
        Object resp = ex.response;
        if (ex.failure != null || !(resp instanceof ILookup || resp instanceof Map)) {
            Throwable t = ex.failure != null ? ex.failure
                : new InvalidResponseException("handler returned " + describe(resp) + ", not a Ring response map");
            server.logError(t, ex.ringRequest);
            writeError(c, ex, 500);
            return;
        }
        Sink sink = sink(ex);
        Object listener = RT.get(resp, WS_LISTENER);
        if (listener != null) {
            if (sink == H1) {
                upgrade(c, ex, resp, listener);
            } else {
                writeError(c, ex, 400); // no WebSocket over HTTP/2 (RFC 8441 is not offered)
            }
            return;
        }
        int mark = sink.mark(c);
        try {
            encode(c, ex, resp, sink);
        } catch (Throwable t) {
            sink.rollback(c, mark);
            server.logError(t, ex.ringRequest);
            writeError(c, ex, 500);
        }
    }

    private static void upgrade(HttpConnection c, Exchange ex, Object resp, Object listener) {
        ServerContext server = c.server;
        c.output.flushNow();
        boolean ok;
        try {
            ok = WebSocketUpgrade.upgrade(c.ctx(), ex.request, resp, listener, server.hooks, server.config,
                server.blockingExecutor, server.channels);
        } catch (Throwable t) {
            server.logError(t, ex.ringRequest);
            writeError(c, ex, 500);
            return;
        }
        if (ok) {
            c.upgraded(ex);
        } else {
            writeError(c, ex, 400);
        }
    }

    private static String describe(Object o) {
        return o == null ? "nil" : o.getClass().getName();
    }

    /** The Ring response rules, once for both protocols: status, headers, body types, HEAD and bodiless statuses. */
    private static void encode(HttpConnection c, Exchange ex, Object resp, Sink sink) throws Exception {
        int status = status(RT.get(resp, STATUS));
        Object body = RT.get(resp, BODY);
        LoopState loop = LoopState.get();
        HeadBuffer h = loop.head.reset();
        sink.start(h, status);
        HeaderScan scan = HeaderScan.write(h, RT.get(resp, HEADERS), loop.lastScan);
        loop.lastScan = scan;
        if (!scan.server && c.server.serverLine != null) {
            h.put(c.server.serverLine);
        }
        if (!scan.date) {
            h.put(HttpDate.line());
        }
        boolean bodiless = StatusLines.bodiless(status);
        boolean noBody = ex.head || bodiless;
        boolean http10 = ex.request.protocolVersion() == HttpVersion.HTTP_1_0;
        ex.keepAlive = ex.keepAlive && !scan.close;
        if (body instanceof String s) {
            byte[] b = s.getBytes(Charsets.of(scan.contentType));
            sink.fixed(c, ex, h, status, bodiless ? -1 : b.length, noBody ? null : b, http10);
            c.finished(ex);
        } else if (body instanceof byte[] b) {
            sink.fixed(c, ex, h, status, bodiless ? -1 : b.length, noBody ? null : b, http10);
            c.finished(ex);
        } else if (body == null) {
            if (scan.contentLength != null && (ex.head || status == 304)) {
                line(h, "Content-Length", scan.contentLength);
                sink.fixed(c, ex, h, status, -1, null, http10);
            } else {
                sink.fixed(c, ex, h, status, bodiless ? -1 : 0, null, http10);
            }
            c.finished(ex);
        } else if (body instanceof File f) {
            if (!f.isFile() || !f.canRead()) {
                throw new InvalidResponseException("response body file is not a readable file: " + f);
            }
            long len = f.length();
            sink.file(c, ex, h, status, bodiless ? -1 : len, noBody || len == 0 ? null : f, http10);
            c.finished(ex);
        } else if (body instanceof InputStream || body instanceof ISeq || c.server.hooks.bodyWriter != null
            && RT.booleanCast(c.server.hooks.bodyWriter.invoke(body))) {
            writeStream(c, ex, h, status, resp, body, scan, noBody, http10, sink);
        } else {
            throw new InvalidResponseException("unsupported response body type " + describe(body)
                + " (extend herald.http/StreamableResponseBody to it)");
        }
    }

    /** A File body for a TLS connection or an HTTP/2 stream (no zero-copy): read in 16 KiB chunks. */
    /** HTTP/1.1 byte[] and String bodies above this size are written by chunks of {@link #CHUNK} bytes as the peer reads. */
    static final int LARGE_BODY = 256 * 1024;
    static final int CHUNK = 64 * 1024;

    /**
     * The connection's output with a ChunkedWriteHandler in front of the connection handler (added on first use:
     * plaintext HTTP/1.1 pipelines do without it until a large body or a file on a stream needs pacing).
     */
    static OutputBatch paced(HttpConnection c) {
        ChannelPipeline p = c.ctx().pipeline();
        if (p.get(ChunkedWriteHandler.class) == null) {
            p.addBefore(c.ctx().name(), ServerInitializer.CHUNKED, new ChunkedWriteHandler());
        }
        return c.output;
    }

    static ChunkedFile chunkedFile(File f, long len) {
        try {
            return new ChunkedFile(new java.io.RandomAccessFile(f, "r"), 0, len, 16384);
        } catch (java.io.IOException e) {
            throw new InvalidResponseException("response body file cannot be opened: " + f + ": " + e.getMessage());
        }
    }

    private static void writeStream(HttpConnection c, Exchange ex, HeadBuffer h, int status, Object resp,
                                    Object body, HeaderScan scan, boolean noBody, boolean http10, Sink sink) {
        if (noBody) {
            if (scan.contentLength != null) {
                line(h, "Content-Length", scan.contentLength);
            }
            sink.fixed(c, ex, h, status, -1, null, http10);
            discard(body);
            c.finished(ex);
            return;
        }
        boolean chunked = sink.streamHead(c, ex, h, status, scan, http10);
        c.output.flushNow();
        Charset cs = Charsets.of(scan.contentType);
        c.server.blockingExecutor.execute(new BodyStreamer(c, ex, resp, body, chunked, cs));
    }

    /** Content-Length (when {@code length >= 0}), Connection, the blank line; then the head into {@code buf}. */
    private static void head(HeadBuffer h, ByteBuf buf, Exchange ex, long length, boolean http10) {
        if (length >= 0) {
            h.put(CONTENT_LENGTH);
            h.putLong(length);
            h.crlf();
        }
        if (!ex.keepAlive) {
            h.put(CLOSE);
        } else if (http10) {
            h.put(KEEP_ALIVE);
        }
        h.crlf();
        buf.writeBytes(h.bytes, 0, h.size);
    }

    static int status(Object s) {
        if (s == null) {
            return 200;
        }
        if (s instanceof Number n) {
            long v = n.longValue();
            if (v >= 100 && v <= 599 && v == n.doubleValue()) {
                return (int) v;
            }
        }
        throw new InvalidResponseException("response :status must be an integer 100-599, got " + s);
    }

    static void line(HeadBuffer h, String name, String value) {
        h.putAscii(name);
        h.putAscii(": ");
        h.putAscii(value);
        h.crlf();
    }

    /** A short plain-text error response; rejected requests close the connection. */
    static void writeError(HttpConnection c, Exchange ex, int status) {
        byte[] body = ascii(StatusLines.reason(status));
        if (ex.reject != 0) {
            ex.keepAlive = false;
        }
        Sink sink = sink(ex);
        HeadBuffer h = LoopState.get().head.reset();
        sink.start(h, status);
        if (c.server.serverLine != null) {
            h.put(c.server.serverLine);
        }
        h.put(HttpDate.line());
        h.put(TEXT_PLAIN);
        if (status == 503) {
            h.put(RETRY_AFTER);
        }
        boolean http10 = ex.request != null && ex.request.protocolVersion() == HttpVersion.HTTP_1_0;
        sink.fixed(c, ex, h, status, body.length, ex.head ? null : body, http10);
        c.finished(ex);
    }

    /** Releases what an unwritten response holds (closes an InputStream body). */
    static void discard(Object response) {
        Object body = response instanceof ILookup || response instanceof Map ? RT.get(response, BODY) : response;
        if (body instanceof InputStream in) {
            try {
                in.close();
            } catch (Exception ignored) {
                // nothing to do: the client is gone
            }
        }
    }

    /**
     * Where a response that passed the Ring rules goes: {@link #H1} encodes HTTP/1.1 bytes into the read batch's
     * buffer, {@link #H2} writes HTTP/2 frames on the stream. Each call writes the head built in {@code h}
     * (header lines; for HTTP/1.1 after the status line) and the body, if any.
     */
    abstract static class Sink {
        /** Begins the head (HTTP/1.1: the status line). */
        abstract void start(HeadBuffer h, int status);

        /** The head, with Content-Length when {@code length >= 0}, then {@code body} unless null (the whole body). */
        abstract void fixed(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, byte[] body,
                            boolean http10);

        /** The head, with Content-Length when {@code length >= 0}, then the file unless {@code f} is null. */
        abstract void file(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, File f,
                           boolean http10);

        /** The head of a streamed body; true when the body must be chunk-framed. */
        abstract boolean streamHead(HttpConnection c, Exchange ex, HeadBuffer h, int status, HeaderScan scan,
                                    boolean http10);

        /** Where to roll back to when encoding fails half-way. */
        int mark(HttpConnection c) {
            return 0;
        }

        void rollback(HttpConnection c, int mark) {
        }
    }

    /** HTTP/1.1: the head and fixed bodies go into the read batch's buffer, files as a FileRegion (ChunkedFile on TLS). */
    static final Sink H1 = new Sink() {
        @Override
        void start(HeadBuffer h, int status) {
            h.put(StatusLines.of(status));
        }

        @Override
        void fixed(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, byte[] body,
                   boolean http10) {
            ByteBuf buf = c.output.out();
            head(h, buf, ex, length, http10);
            if (body != null) {
                if (body.length > LARGE_BODY) {
                    // a whole copy into direct memory per queued response let slow readers exhaust it (QA Q23):
                    // large bodies go out a chunk at a time, as the connection drains
                    paced(c).write(new ChunkedStream(new ByteArrayInputStream(body), CHUNK));
                } else {
                    buf.writeBytes(body);
                }
            }
        }

        @Override
        void file(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, File f, boolean http10) {
            head(h, c.output.out(), ex, length, http10);
            if (f != null) {
                c.output.write(c.info.tls != null ? chunkedFile(f, length) : new DefaultFileRegion(f, 0, length));
            }
        }

        @Override
        boolean streamHead(HttpConnection c, Exchange ex, HeadBuffer h, int status, HeaderScan scan, boolean http10) {
            boolean chunked = false;
            if (scan.contentLength != null) {
                line(h, "Content-Length", scan.contentLength);
            } else if (http10) {
                ex.keepAlive = false;
            } else {
                chunked = true;
                h.put(CHUNKED);
            }
            head(h, c.output.out(), ex, -1, http10);
            return chunked;
        }

        @Override
        int mark(HttpConnection c) {
            return c.output.out().writerIndex();
        }

        @Override
        void rollback(HttpConnection c, int mark) {
            c.output.out().writerIndex(mark);
        }
    };

    /**
     * HTTP/2: the head becomes a HEADERS frame (lower-case names, no connection-specific fields), a fixed body one
     * DATA frame; files and streams are written as ByteBufs that the stream's adapter frames, ending with an empty one.
     */
    static final Sink H2 = new Sink() {
        @Override
        void start(HeadBuffer h, int status) {
        }

        @Override
        void fixed(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, byte[] body,
                   boolean http10) {
            headers(c, h, status, length, body == null);
            if (body != null) {
                c.output.write(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(body), true));
            }
        }

        @Override
        void file(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, File f, boolean http10) {
            headers(c, h, status, length, f == null);
            if (f != null) {
                paced(c).write(chunkedFile(f, length));
                c.output.write(Unpooled.EMPTY_BUFFER); // the end of the stream, after the file's last chunk
            }
        }

        @Override
        boolean streamHead(HttpConnection c, Exchange ex, HeadBuffer h, int status, HeaderScan scan, boolean http10) {
            if (scan.contentLength != null) {
                line(h, "Content-Length", scan.contentLength);
            }
            headers(c, h, status, -1, false);
            return false;
        }

        private void headers(HttpConnection c, HeadBuffer h, int status, long length, boolean last) {
            if (length >= 0) {
                h.put(CONTENT_LENGTH);
                h.putLong(length);
                h.crlf();
            }
            c.output.write(new DefaultHttp2HeadersFrame(ResponseHeaders.of(status, h.bytes, h.size), last));
        }
    };
}
