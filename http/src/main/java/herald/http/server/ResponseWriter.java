package herald.http.server;

import static herald.http.server.RingKeys.*;

import clojure.lang.ILookup;
import clojure.lang.ISeq;
import clojure.lang.RT;
import herald.http.exception.InvalidResponseException;
import herald.http.http2.Http2Request;
import herald.http.websocket.WebSocketUpgrade;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.handler.stream.ChunkedFile;
import io.netty.handler.codec.http.HttpVersion;
import herald.http.files.FileParts;
import herald.http.files.FileRange;
import java.io.File;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** Writes a Ring response: fixed bodies in one buffer, files zero-copy, streams chunked off the event loop. */
final class ResponseWriter {
    static final byte[] CONTENT_LENGTH = ascii("Content-Length: ");
    static final byte[] CHUNKED = ascii("Transfer-Encoding: chunked\r\n");
    static final byte[] CLOSE = ascii("Connection: close\r\n");
    static final byte[] KEEP_ALIVE = ascii("Connection: keep-alive\r\n");

    private ResponseWriter() {}

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** The sink for {@code ex}: HTTP/2 frames for a request that came on an HTTP/2 stream, else HTTP/1.1 bytes. */
    static ResponseSink sink(Exchange ex) {
        return ex.request != null && ex.request.version() == Http2Request.VERSION
            ? ResponseSink.H2 : ResponseSink.H1;
    }

    /** Writes the handler's answer (or a 500 when it failed or is not a valid response). */
    static void write(HttpConnection c, Exchange ex) {
        ServerContext server = c.server;
        Object resp = ex.response;
        if (ex.refusal != null) {
            discard(resp); // its body was refused while the handler ran: the refusal is the answer
            ServerAnswers.write(c, ex, ex.refusal);
            return;
        }
        if (ex.bodyLeft()) {
            ex.keepAlive = false; // answered before its whole body arrived: the rest is read and dropped, then close
        }
        if (ex.failure != null || !(resp instanceof ILookup || resp instanceof Map)) {
            Throwable t = ex.failure != null ? ex.failure
                : new InvalidResponseException("handler returned " + describe(resp) + ", not a Ring response map");
            server.logError(t, ex.ringRequest);
            ServerAnswers.write(c, ex, ex.failure != null ? Refusal.HANDLER_FAILED : Refusal.INVALID_RESPONSE);
            return;
        }
        ResponseSink sink = sink(ex);
        Object listener = RT.get(resp, WS_LISTENER);
        if (listener != null) {
            if (sink == ResponseSink.H1) {
                upgrade(c, ex, resp, listener);
            } else {
                ServerAnswers.write(c, ex, Refusal.WEBSOCKET_OVER_HTTP2); // RFC 8441 is not offered
            }
            return;
        }
        int mark = sink.mark(c);
        try {
            encode(c, ex, resp, sink);
        } catch (Throwable t) {
            sink.rollback(c, mark);
            server.logError(t, ex.ringRequest);
            ServerAnswers.write(c, ex, Refusal.INVALID_RESPONSE);
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
            ServerAnswers.write(c, ex, Refusal.INVALID_RESPONSE);
            return;
        }
        if (ok) {
            ex.status = 101; // the handshake's answer: logged like any other (no body bytes)
            if (server.accessLog != null) {
                server.accessLog.record(ex, c.info);
            }
            c.end.upgraded(ex);
        } else {
            ServerAnswers.write(c, ex, WebSocketUpgrade.unsupportedVersion(ex.request) ? Refusal.WEBSOCKET_VERSION
                : Refusal.WEBSOCKET_NOT_UPGRADE);
        }
    }

    static String describe(Object o) {
        return o == null ? "nil" : o.getClass().getName();
    }

    /** The Ring response rules, once for both protocols: status, headers, body types, HEAD and bodiless statuses. */
    static void encode(HttpConnection c, Exchange ex, Object resp, ResponseSink sink) throws Exception {
        int status = status(RT.get(resp, STATUS));
        ex.status = status;
        Object body = RT.get(resp, BODY);
        LoopState loop = c.output.loop();
        HeaderScan scan = HeaderScan.of(RT.get(resp, HEADERS), loop);
        boolean bodiless = StatusLines.bodiless(status);
        boolean noBody = ex.head || bodiless;
        boolean http10 = ex.request.version() == HttpVersion.HTTP_1_0;
        ex.keepAlive = ex.keepAlive && !scan.close;
        if (sink == ResponseSink.H1 && (body instanceof String || body instanceof byte[]
            || body == null && (scan.contentLength == null || !ex.head && status != 304))) {
            loop.fixed.write(c, ex, scan, status, body, bodiless, noBody, http10);
            c.exchanges.finished(ex);
            return;
        }
        HeadBuffer h = loop.head.reset();
        sink.start(h, status);
        h.put(scan.bytes, 0, scan.size);
        if (!scan.server && c.server.serverLine != null) {
            h.put(c.server.serverLine);
        }
        if (!scan.date) {
            h.put(HttpDate.line());
        }
        if (body instanceof String s) {
            byte[] b = s.getBytes(scan.charset);
            ex.bytes = noBody ? 0 : b.length;
            sink.fixed(c, ex, h, status, bodiless ? -1 : b.length, noBody ? null : b, http10);
            c.exchanges.finished(ex);
        } else if (body instanceof byte[] b) {
            ex.bytes = noBody ? 0 : b.length;
            sink.fixed(c, ex, h, status, bodiless ? -1 : b.length, noBody ? null : b, http10);
            c.exchanges.finished(ex);
        } else if (body == null) {
            ex.bytes = 0;
            if (scan.contentLength != null && (ex.head || status == 304)) {
                line(h, "Content-Length", scan.contentLength);
                sink.fixed(c, ex, h, status, -1, null, http10);
            } else {
                sink.fixed(c, ex, h, status, bodiless ? -1 : 0, null, http10);
            }
            c.exchanges.finished(ex);
        } else if (body instanceof File f) {
            if (!f.isFile() || !f.canRead()) {
                throw new InvalidResponseException("response body file is not a readable file: " + f);
            }
            long len = f.length();
            ex.bytes = noBody ? 0 : len;
            sink.file(c, ex, h, status, bodiless ? -1 : len, noBody || len == 0 ? null : f, http10);
            c.exchanges.finished(ex);
        } else if (body instanceof FileRange || body instanceof FileParts) {
            long len = fileBodyLength(body);
            ex.bytes = noBody ? 0 : len;
            sink.file(c, ex, h, status, bodiless ? -1 : len, noBody || len == 0 ? null : body, http10);
            c.exchanges.finished(ex);
        } else if (body instanceof InputStream || body instanceof ISeq || c.server.hooks.bodyWriter != null
            && RT.booleanCast(c.server.hooks.bodyWriter.invoke(body))) {
            writeStream(c, ex, h, status, resp, body, scan, noBody, http10, sink);
        } else {
            throw new InvalidResponseException("unsupported response body type " + describe(body)
                + " (extend herald.http/StreamableResponseBody to it)");
        }
    }

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

    /** The length of a FileRange or FileParts body, after checking that each file slice is readable and in range. */
    static long fileBodyLength(Object body) {
        if (body instanceof FileRange r) {
            checkRange(r);
            return r.length;
        }
        FileParts parts = (FileParts) body;
        for (int i = 0; i < parts.size(); i++) {
            if (parts.part(i) instanceof FileRange r) {
                checkRange(r);
            }
        }
        return parts.length;
    }

    private static void checkRange(FileRange r) {
        File f = r.file;
        if (!f.isFile() || !f.canRead()) {
            throw new InvalidResponseException("response body file is not a readable file: " + f);
        }
        if (r.offset + r.length > f.length()) {
            throw new InvalidResponseException("response body range " + r + " is beyond the file's " + f.length()
                + " bytes");
        }
    }

    /** A File body for a TLS connection or an HTTP/2 stream (no zero-copy): read in 16 KiB chunks. */
    static ChunkedFile chunkedFile(File f, long len) {
        return chunkedFile(f, 0, len);
    }

    /** {@code len} bytes of {@code f} from {@code offset}, read in 16 KiB chunks (TLS, HTTP/2). */
    static ChunkedFile chunkedFile(File f, long offset, long len) {
        try {
            return new ChunkedFile(new java.io.RandomAccessFile(f, "r"), offset, len, 16384);
        } catch (java.io.IOException e) {
            throw new InvalidResponseException("response body file cannot be opened: " + f + ": " + e.getMessage());
        }
    }

    private static void writeStream(HttpConnection c, Exchange ex, HeadBuffer h, int status, Object resp,
                                    Object body, HeaderScan scan, boolean noBody, boolean http10,
                                    ResponseSink sink) {
        if (noBody) {
            ex.bytes = 0;
            if (scan.contentLength != null) {
                line(h, "Content-Length", scan.contentLength);
            }
            sink.fixed(c, ex, h, status, -1, null, http10);
            discard(body);
            c.exchanges.finished(ex);
            return;
        }
        boolean chunked = sink.streamHead(c, ex, h, status, scan, http10);
        c.output.flushNow();
        c.server.blockingExecutor.execute(new BodyStreamer(c, ex, resp, body, chunked, scan.charset));
    }

    /** Content-Length (when {@code length >= 0}), Connection, the blank line; then the head into {@code buf}. */
    static void head(HeadBuffer h, ByteBuf buf, Exchange ex, long length, boolean http10) {
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
        if (s instanceof Long l) {
            long v = l;
            if (v >= 100 && v <= 599) {
                return (int) v;
            }
        }
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
}
