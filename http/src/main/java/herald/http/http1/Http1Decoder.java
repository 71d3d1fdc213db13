package herald.http.http1;

import static herald.http.http1.Http1Names.TCHAR;

import herald.http.config.ServerConfig;
import herald.http.server.HeadProgress;
import herald.http.server.Refusal;
import herald.http.server.RefusalException;
import herald.http.server.RequestHead;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.Arrays;
import java.util.List;

/**
 * herald's HTTP/1.1 request decoder (replaces Netty's {@code HttpRequestDecoder}): finds a request head's lines
 * in the buffer, copies the head once and hands it to {@link Http1Parser}, which checks it in the same pass. Emits
 * a {@link RequestHead} per head: alone for a request without a body ({@link RequestHead#full}), else followed by
 * {@code HttpContent}s (Content-Length or chunked framing) ending with a {@code LastHttpContent}; a refused body is
 * a {@code LastHttpContent} whose decoder result fails with a {@link RefusalException}. Limits: a request line over {@code :max-request-line-bytes} is refused 414, header lines
 * over {@code :max-header-bytes} (their CRLFs included, the empty line not) 431, chunk-size lines over the
 * request-line limit 400, a chunk over {@code :max-body-bytes} 413, trailers over the header limit 431. A refused
 * head or body ends decoding: later input is discarded (the connection answers and closes).
 *
 * <p>It is a {@code HttpRequestDecoder} by type only (none of its decoding runs): Netty's WebSocket handshaker finds
 * the HTTP decoder it replaces with the frame decoder by that class. The connection behind it sees only its
 * messages and {@link HeadProgress} (the request timeouts).
 */
public final class Http1Decoder extends HttpRequestDecoder implements HeadProgress {
    private static final byte LF = '\n';
    private static final int HEAD = 0;
    private static final int BODY = 1;
    private static final int CHUNK_SIZE = 2;
    private static final int CHUNK_DATA = 3;
    private static final int CHUNK_END = 4;
    private static final int TRAILERS = 5;
    private static final int FAILED = 6;

    /** nanoTime when the current partial head started arriving, 0 when none is pending (the request timeout). */
    private long partialSince;
    private final Http1Parser parser;
    private final int maxLine;
    private final int maxHeader;
    private final long maxBody;
    private int state = HEAD;
    /** The LF of each line of the head being received, relative to its start. */
    private int[] ends = new int[16];
    private int lines;
    /** Bytes of the head being received already searched for line ends. */
    private int scanned;
    private long remaining;
    private int trailerBytes;

    public Http1Decoder(ServerConfig config) {
        this(config.maxRequestLineBytes, config.maxHeaderBytes, config.maxBodyBytes);
    }

    Http1Decoder(int maxLine, int maxHeader, long maxBody) {
        super(new HttpDecoderConfig().setInitialBufferSize(16));
        this.maxLine = maxLine;
        this.maxHeader = maxHeader;
        this.maxBody = maxBody;
        this.parser = new Http1Parser(maxBody);
    }

    @Override
    public long partialSince() {
        return partialSince;
    }

    @Override
    public void requestDone() {
        partialSince = 0;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        switch (state) {
            case HEAD -> head(in, out);
            case BODY -> body(in, out);
            case CHUNK_SIZE -> chunkSize(in, out);
            case CHUNK_DATA -> chunkData(in, out);
            case CHUNK_END -> chunkEnd(in, out);
            case TRAILERS -> trailers(in, out);
            default -> in.skipBytes(in.readableBytes());
        }
    }

    @Override
    protected void decodeLast(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (in.isReadable()) {
            decode(ctx, in, out);
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        ctx.fireUserEventTriggered(evt);
    }

    private void head(ByteBuf in, List<Object> out) {
        int r = in.readerIndex();
        int w = in.writerIndex();
        if (lines == 0) {
            int r0 = r;
            while (w - r >= 2 && in.getByte(r) == '\r' && in.getByte(r + 1) == '\n') {
                r += 2; // empty lines before a request line are ignored (RFC 9112 2.2)
            }
            if (r != r0) {
                in.readerIndex(r);
                scanned = 0;
            }
            if (r == w) {
                return;
            }
        }
        int from = r + scanned;
        while (true) {
            int lf = in.indexOf(from, w, LF);
            if (lf < 0) {
                scanned = w - r;
                Refusal bad = lines >= 1 ? Http1Bytes.requestLineRefusal(in, r, r + ends[0]) : null;
                if (bad != null) {
                    refuse(in, out, bad); // judged at its CRLF: waiting for the rest of the head changes nothing
                    return;
                }
                if (lines == 0 ? w - r > maxLine + 1 : w - r - ends[0] - 1 > maxHeader + 2) {
                    refuse(in, out, lines == 0 ? Refusal.REQUEST_LINE_TOO_LONG : Refusal.HEADERS_TOO_LARGE);
                } else if (partialSince == 0) {
                    partialSince = System.nanoTime();
                }
                return;
            }
            int rel = lf - r;
            if (lines == ends.length) {
                ends = Arrays.copyOf(ends, lines * 2);
            }
            ends[lines++] = rel;
            if (lines == 1) {
                if ((rel > 0 && in.getByte(lf - 1) == '\r' ? rel - 1 : rel) > maxLine) {
                    refuse(in, out, Refusal.REQUEST_LINE_TOO_LONG);
                    return;
                }
            } else {
                int prev = ends[lines - 2];
                boolean empty = rel - prev == 1 || rel - prev == 2 && in.getByte(lf - 1) == '\r';
                if (rel - ends[0] - (empty ? rel - prev : 0) > maxHeader) {
                    refuse(in, out, Refusal.HEADERS_TOO_LARGE);
                    return;
                }
                if (empty) {
                    emit(in, r, rel + 1, out);
                    return;
                }
            }
            from = lf + 1;
        }
    }

    private void emit(ByteBuf in, int r, int len, List<Object> out) {
        byte[] b = new byte[len];
        in.getBytes(r, b, 0, len);
        in.readerIndex(r + len);
        RequestHead req = parser.parse(b, ends, lines);
        lines = 0;
        scanned = 0;
        partialSince = 0;
        out.add(req);
        if (req.refusal() != null) {
            state = FAILED;
            in.skipBytes(in.readableBytes());
        } else if (parser.chunked) {
            state = CHUNK_SIZE;
        } else if (parser.contentLength > 0) {
            state = BODY;
            remaining = parser.contentLength;
        }
    }

    private void refuse(ByteBuf in, List<Object> out, Refusal why) {
        out.add(RequestHead.refused(why));
        lines = 0;
        scanned = 0;
        state = FAILED;
        in.skipBytes(in.readableBytes());
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
