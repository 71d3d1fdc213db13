package herald.http.http1;

import static herald.http.http1.Http1Names.TCHAR;

import herald.http.server.Refusal;
import herald.http.server.RefusalException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.List;

/**
 * The body framing of {@link Http1Decoder} (RFC 9112 6, 7.1): a Content-Length body as contents up to the last one,
 * or chunks (size line, data, CRLF) then the trailer section, which is checked and dropped. A chunk-size line over
 * the request-line limit is refused 400, a chunk over {@code :max-body-bytes} 413, trailers over the header limit
 * 431: the refusal is a {@code LastHttpContent} failing with {@link RefusalException}, and decoding ends.
 */
final class BodyFraming {
    private static final byte LF = '\n';
    /** No body in progress: the next bytes are a request head. */
    static final int HEAD = 0;
    static final int BODY = 1;
    static final int CHUNK_SIZE = 2;
    static final int CHUNK_DATA = 3;
    static final int CHUNK_END = 4;
    static final int TRAILERS = 5;
    /** Decoding ended (a refused head or body): later input is discarded. */
    static final int FAILED = 6;

    private final int maxLine;
    private final int maxHeader;
    private final long maxBody;
    int state = HEAD;
    private long remaining;
    private int trailerBytes;

    BodyFraming(int maxLine, int maxHeader, long maxBody) {
        this.maxLine = maxLine;
        this.maxHeader = maxHeader;
        this.maxBody = maxBody;
    }

    /** A body of {@code n > 0} bytes follows. */
    void length(long n) {
        state = BODY;
        remaining = n;
    }

    void decode(ByteBuf in, List<Object> out) {
        switch (state) {
            case BODY -> body(in, out);
            case CHUNK_SIZE -> chunkSize(in, out);
            case CHUNK_DATA -> chunkData(in, out);
            case CHUNK_END -> chunkEnd(in, out);
            case TRAILERS -> trailers(in, out);
            default -> in.skipBytes(in.readableBytes());
        }
    }

    private void failBody(ByteBuf in, List<Object> out, Refusal why) {
        DefaultLastHttpContent c = new DefaultLastHttpContent(Unpooled.EMPTY_BUFFER, EmptyHttpHeaders.INSTANCE);
        c.setDecoderResult(DecoderResult.failure(new RefusalException(why)));
        out.add(c);
        state = FAILED;
        in.skipBytes(in.readableBytes());
    }

    private void body(ByteBuf in, List<Object> out) {
        int n = (int) Math.min(remaining, in.readableBytes());
        ByteBuf part = in.readRetainedSlice(n);
        remaining -= n;
        if (remaining == 0) {
            state = HEAD;
            out.add(new DefaultLastHttpContent(part, EmptyHttpHeaders.INSTANCE));
        } else {
            out.add(new DefaultHttpContent(part));
        }
    }

    private void chunkData(ByteBuf in, List<Object> out) {
        int n = (int) Math.min(remaining, in.readableBytes());
        out.add(new DefaultHttpContent(in.readRetainedSlice(n)));
        remaining -= n;
        if (remaining == 0) {
            state = CHUNK_END;
        }
    }

    private void chunkEnd(ByteBuf in, List<Object> out) {
        if (in.readableBytes() < 2) {
            if (in.getByte(in.readerIndex()) != '\r') {
                failBody(in, out, Refusal.BAD_CHUNK);
            }
            return;
        }
        int r = in.readerIndex();
        if (in.getByte(r) != '\r' || in.getByte(r + 1) != '\n') {
            failBody(in, out, Refusal.BAD_CHUNK);
            return;
        }
        in.skipBytes(2);
        state = CHUNK_SIZE;
    }

    /** chunk-size [ chunk-ext ] CRLF (RFC 9112 7.1): hex digits, then BWS ';' extensions, which are ignored. */
    private void chunkSize(ByteBuf in, List<Object> out) {
        int r = in.readerIndex();
        int w = in.writerIndex();
        int lf = in.indexOf(r, w, LF);
        if (lf < 0 ? w - r > maxLine : lf - r > maxLine + 1) {
            failBody(in, out, Refusal.BAD_CHUNK);
            return;
        }
        if (lf < 0) {
            return;
        }
        int e = lf - 1;
        if (e < r || in.getByte(e) != '\r') {
            failBody(in, out, Refusal.BAD_CHUNK);
            return;
        }
        long size = 0;
        int i = r;
        for (; i < e; i++) {
            int d = Character.digit(in.getByte(i), 16);
            if (d < 0) {
                break;
            }
            if (i - r == 15) {
                failBody(in, out, Refusal.BAD_CHUNK);
                return;
            }
            size = size << 4 | d;
        }
        boolean ok = i > r;
        int digitsEnd = i;
        while (ok && i < e && (in.getByte(i) == ' ' || in.getByte(i) == '\t')) {
            i++;
        }
        if (ok && i == e && i > digitsEnd) {
            ok = false; // BWS only before a ';' extension (RFC 9112 7.1.1): "5 " is not a chunk size
        }
        if (ok && i < e) {
            ok = in.getByte(i) == ';';
            for (; ok && i < e; i++) {
                byte c = in.getByte(i);
                ok = c != 0 && c != '\r';
            }
        }
        if (!ok) {
            failBody(in, out, Refusal.BAD_CHUNK);
            return;
        }
        in.readerIndex(lf + 1);
        if (size == 0) {
            state = TRAILERS;
            trailerBytes = 0;
        } else if (size > maxBody) {
            failBody(in, out, Refusal.BODY_TOO_LARGE);
        } else {
            remaining = size;
            state = CHUNK_DATA;
        }
    }

    /** The trailer section after the last chunk: checked like header lines, then dropped (Ring has no trailers). */
    private void trailers(ByteBuf in, List<Object> out) {
        while (true) {
            int r = in.readerIndex();
            int w = in.writerIndex();
            int lf = in.indexOf(r, w, LF);
            if (lf < 0) {
                if (trailerBytes + w - r > maxHeader + 2) {
                    failBody(in, out, Refusal.TRAILERS_TOO_LARGE);
                }
                return;
            }
            int e = lf - 1;
            if (e < r || in.getByte(e) != '\r') {
                failBody(in, out, Refusal.BAD_TRAILER);
                return;
            }
            in.readerIndex(lf + 1);
            if (e == r) {
                state = HEAD;
                out.add(LastHttpContent.EMPTY_LAST_CONTENT);
                return;
            }
            trailerBytes += lf + 1 - r;
            if (trailerBytes > maxHeader) {
                failBody(in, out, Refusal.TRAILERS_TOO_LARGE);
                return;
            }
            int i = r;
            while (i < e && TCHAR[in.getByte(i) & 0xff]) {
                i++;
            }
            boolean ok = i > r && i < e && in.getByte(i) == ':';
            for (i++; ok && i < e; i++) {
                byte c = in.getByte(i);
                ok = c != 0 && c != '\r';
            }
            if (!ok) {
                failBody(in, out, Refusal.BAD_TRAILER);
                return;
            }
        }
    }
}
