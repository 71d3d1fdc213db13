package herald.http.server;

import herald.http.files.FileParts;
import herald.http.files.FileRange;
import herald.http.http2.ResponseHeaders;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.DefaultFileRegion;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.stream.ChunkedStream;
import java.io.ByteArrayInputStream;
import java.io.File;

import static herald.http.server.ResponseWriter.*;

/**
 * Where a response that passed the Ring rules goes: {@link #H1} encodes HTTP/1.1 bytes into the read batch's
 * buffer, {@link #H2} writes HTTP/2 frames on the stream. Each call writes the head built in {@code h}
 * (header lines; for HTTP/1.1 after the status line) and the body, if any.
 */
abstract class ResponseSink {
    /** Begins the head (HTTP/1.1: the status line). */
    abstract void start(HeadBuffer h, int status);

    /** The head, with Content-Length when {@code length >= 0}, then {@code body} unless null (the whole body). */
    abstract void fixed(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, byte[] body,
                        boolean http10);

    /**
     * The head, with Content-Length when {@code length >= 0}, then the file body unless {@code f} is null: a whole
     * {@code File}, a {@link FileRange} or {@link FileParts}.
     */
    abstract void file(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, Object f,
                       boolean http10);

    /**
     * Writes a file body: byte arrays into the output, file slices as {@code DefaultFileRegion}s (zero-copy) when
     * {@code zeroCopy}, else as {@code ChunkedFile}s paced by the ChunkedWriteHandler (TLS, HTTP/2: each chunk
     * a ByteBuf).
     */
    static void fileBody(HttpConnection c, Object body, boolean zeroCopy, boolean h2) {
        if (body instanceof File f) {
            slice(c, f, 0, f.length(), zeroCopy);
        } else if (body instanceof FileRange r) {
            slice(c, r.file, r.offset, r.length, zeroCopy);
        } else {
            FileParts parts = (FileParts) body;
            for (int i = 0; i < parts.size(); i++) {
                Object p = parts.part(i);
                if (p instanceof FileRange r) {
                    slice(c, r.file, r.offset, r.length, zeroCopy);
                } else if (h2) {
                    c.output.write(Unpooled.wrappedBuffer((byte[]) p));
                } else {
                    c.output.out().writeBytes((byte[]) p);
                }
            }
        }
    }

    private static void slice(HttpConnection c, File f, long offset, long length, boolean zeroCopy) {
        if (length == 0) {
            return;
        }
        if (zeroCopy) {
            c.output.write(new DefaultFileRegion(f, offset, length));
        } else {
            paced(c).write(chunkedFile(f, offset, length));
        }
    }

    /** The head of a streamed body; true when the body must be chunk-framed. */
    abstract boolean streamHead(HttpConnection c, Exchange ex, HeadBuffer h, int status, HeaderScan scan,
                                boolean http10);

    /** Where to roll back to when encoding fails half-way. */
    int mark(HttpConnection c) {
        return 0;
    }

    void rollback(HttpConnection c, int mark) {
    }

    /** HTTP/1.1: the head and fixed bodies go into the read batch's buffer, files as a FileRegion (ChunkedFile on TLS). */
    static final ResponseSink H1 = new ResponseSink() {
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
        void file(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, Object f, boolean http10) {
            head(h, c.output.out(), ex, length, http10);
            if (f != null) {
                fileBody(c, f, c.info.tls == null, false);
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
    static final ResponseSink H2 = new ResponseSink() {
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
        void file(HttpConnection c, Exchange ex, HeadBuffer h, int status, long length, Object f, boolean http10) {
            headers(c, h, status, length, f == null);
            if (f != null) {
                fileBody(c, f, false, true);
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
