package herald.http.server;

import static herald.http.server.RingKeys.*;

import clojure.lang.AFn;
import clojure.lang.IKVReduce;
import clojure.lang.ILookup;
import clojure.lang.ISeq;
import clojure.lang.Named;
import clojure.lang.RT;
import herald.http.exception.InvalidResponseException;
import herald.http.websocket.WebSocketUpgrade;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.DefaultFileRegion;
import io.netty.handler.codec.http.HttpVersion;
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
    private static final short CRLF = 0x0d0a;
    private static final short COLON_SP = 0x3a20;

    private ResponseWriter() {}

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
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
        Object listener = RT.get(resp, WS_LISTENER);
        if (listener != null) {
            upgrade(c, ex, resp, listener);
            return;
        }
        ByteBuf buf = c.output.out();
        int mark = buf.writerIndex();
        try {
            encode(c, ex, resp, buf);
        } catch (Throwable t) {
            buf.writerIndex(mark);
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

    private static void encode(HttpConnection c, Exchange ex, Object resp, ByteBuf buf) throws Exception {
        int status = status(RT.get(resp, STATUS));
        Object body = RT.get(resp, BODY);
        buf.writeBytes(StatusLines.of(status));
        HeaderScan scan = HeaderScan.write(buf, RT.get(resp, HEADERS));
        if (!scan.server && c.server.serverLine != null) {
            buf.writeBytes(c.server.serverLine);
        }
        if (!scan.date) {
            buf.writeBytes(HttpDate.line());
        }
        boolean bodiless = StatusLines.bodiless(status);
        boolean noBody = ex.head || bodiless;
        boolean http10 = ex.request.protocolVersion() == HttpVersion.HTTP_1_0;
        ex.keepAlive = ex.keepAlive && !scan.close;
        if (body instanceof String s) {
            Charset cs = Charsets.of(scan.contentType);
            if (cs == StandardCharsets.UTF_8) {
                int n = ByteBufUtil.utf8Bytes(s);
                head(buf, ex, bodiless ? -1 : n, http10);
                if (!noBody) {
                    ByteBufUtil.reserveAndWriteUtf8(buf, s, n);
                }
            } else {
                byte[] b = s.getBytes(cs);
                head(buf, ex, bodiless ? -1 : b.length, http10);
                if (!noBody) {
                    buf.writeBytes(b);
                }
            }
            c.finished(ex);
        } else if (body instanceof byte[] b) {
            head(buf, ex, bodiless ? -1 : b.length, http10);
            if (!noBody) {
                buf.writeBytes(b);
            }
            c.finished(ex);
        } else if (body == null) {
            if (scan.contentLength != null && (ex.head || status == 304)) {
                line(buf, "Content-Length", scan.contentLength);
                head(buf, ex, -1, http10);
            } else {
                head(buf, ex, bodiless ? -1 : 0, http10);
            }
            c.finished(ex);
        } else if (body instanceof File f) {
            writeFile(c, ex, buf, f, bodiless, noBody, http10);
        } else if (body instanceof InputStream || body instanceof ISeq || c.server.hooks.bodyWriter != null
            && RT.booleanCast(c.server.hooks.bodyWriter.invoke(body))) {
            writeStream(c, ex, buf, resp, body, scan, noBody, http10);
        } else {
            throw new InvalidResponseException("unsupported response body type " + describe(body)
                + " (extend herald.http/StreamableResponseBody to it)");
        }
    }

    private static void writeFile(HttpConnection c, Exchange ex, ByteBuf buf, File f, boolean bodiless,
                                  boolean noBody, boolean http10) {
        if (!f.isFile() || !f.canRead()) {
            throw new InvalidResponseException("response body file is not a readable file: " + f);
        }
        long len = f.length();
        head(buf, ex, bodiless ? -1 : len, http10);
        if (!noBody && len > 0) {
            c.output.write(new DefaultFileRegion(f, 0, len));
        }
        c.finished(ex);
    }

    private static void writeStream(HttpConnection c, Exchange ex, ByteBuf buf, Object resp, Object body,
                                    HeaderScan scan, boolean noBody, boolean http10) {
        if (noBody) {
            if (scan.contentLength != null) {
                line(buf, "Content-Length", scan.contentLength);
            }
            head(buf, ex, -1, http10);
            discard(body);
            c.finished(ex);
            return;
        }
        boolean chunked = false;
        if (scan.contentLength != null) {
            line(buf, "Content-Length", scan.contentLength);
        } else if (http10) {
            ex.keepAlive = false;
        } else {
            chunked = true;
            buf.writeBytes(CHUNKED);
        }
        head(buf, ex, -1, http10);
        c.output.flushNow();
        Charset cs = Charsets.of(scan.contentType);
        c.server.blockingExecutor.execute(new BodyStreamer(c, ex, resp, body, chunked, cs));
    }

    /** Content-Length (when {@code length >= 0}), Connection, and the blank line. */
    private static void head(ByteBuf buf, Exchange ex, long length, boolean http10) {
        if (length >= 0) {
            buf.writeBytes(CONTENT_LENGTH);
            writeLong(buf, length);
            buf.writeShort(CRLF);
        }
        if (!ex.keepAlive) {
            buf.writeBytes(CLOSE);
        } else if (http10) {
            buf.writeBytes(KEEP_ALIVE);
        }
        buf.writeShort(CRLF);
    }

    private static void writeLong(ByteBuf buf, long v) {
        if (v < 10) {
            buf.writeByte('0' + (int) v);
        } else {
            ByteBufUtil.writeAscii(buf, Long.toString(v));
        }
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

    static void line(ByteBuf buf, String name, String value) {
        ByteBufUtil.writeAscii(buf, name);
        buf.writeShort(COLON_SP);
        ByteBufUtil.writeAscii(buf, value);
        buf.writeShort(CRLF);
    }

    /** A short plain-text error response; rejected requests close the connection. */
    static void writeError(HttpConnection c, Exchange ex, int status) {
        byte[] body = ascii(StatusLines.reason(status));
        if (ex.reject != 0) {
            ex.keepAlive = false;
        }
        ByteBuf buf = c.output.out();
        buf.writeBytes(StatusLines.of(status));
        if (c.server.serverLine != null) {
            buf.writeBytes(c.server.serverLine);
        }
        buf.writeBytes(HttpDate.line());
        buf.writeBytes(TEXT_PLAIN);
        if (status == 503) {
            buf.writeBytes(RETRY_AFTER);
        }
        boolean http10 = ex.request != null && ex.request.protocolVersion() == HttpVersion.HTTP_1_0;
        head(buf, ex, body.length, http10);
        if (!ex.head) {
            buf.writeBytes(body);
        }
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

    /** Writes the user's headers, noting the ones the server handles itself. */
    static final class HeaderScan extends AFn {
        private final ByteBuf buf;
        boolean date;
        boolean server;
        boolean close;
        String contentType;
        String contentLength;

        private HeaderScan(ByteBuf buf) {
            this.buf = buf;
        }

        static HeaderScan write(ByteBuf buf, Object headers) {
            HeaderScan scan = new HeaderScan(buf);
            if (headers == null) {
                return scan;
            }
            if (headers instanceof IKVReduce kv) {
                kv.kvreduce(scan, null);
                return scan;
            }
            Iterable<?> entries = headers instanceof Map<?, ?> m && !(headers instanceof Iterable<?>)
                ? m.entrySet() : (Iterable<?>) headers;
            for (Object o : entries) {
                Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
                scan.invoke(null, e.getKey(), e.getValue());
            }
            return scan;
        }

        @Override
        public Object invoke(Object acc, Object key, Object v) {
            HeaderCache.Name name = HeaderCache.name(name(key));
            if (v instanceof String s) {
                one(name, s);
            } else if (v instanceof Iterable<?> || v instanceof ISeq) {
                for (ISeq s = RT.seq(v); s != null; s = s.next()) {
                    one(name, value(name.name, s.first()));
                }
            } else if (v != null) {
                one(name, value(name.name, v));
            }
            return acc;
        }

        private void one(HeaderCache.Name name, String value) {
            switch (name.kind) {
                case HeaderCache.DATE -> date = true;
                case HeaderCache.SERVER -> server = true;
                case HeaderCache.CONTENT_TYPE -> contentType = value;
                case HeaderCache.CONNECTION -> {
                    close |= value.toLowerCase(java.util.Locale.ROOT).contains("close");
                    return;
                }
                case HeaderCache.CONTENT_LENGTH -> {
                    contentLength = value.trim();
                    return;
                }
                case HeaderCache.TRANSFER_ENCODING -> {
                    return;
                }
                default -> { }
            }
            buf.writeBytes(name.prefix);
            buf.writeBytes(HeaderCache.value(name.name, value));
        }

        private static String name(Object k) {
            return k instanceof String s ? s : k instanceof Named nm ? nm.getName() : String.valueOf(k);
        }

        private static String value(String name, Object v) {
            if (v == null) {
                throw new InvalidResponseException("response header " + name + " has a nil value");
            }
            return v.toString();
        }
    }
}
