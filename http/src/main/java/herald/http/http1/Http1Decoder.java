package herald.http.http1;

import herald.http.config.ServerConfig;
import herald.http.server.HeadProgress;
import herald.http.server.Refusal;
import herald.http.server.RequestHead;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpRequestDecoder;
import java.util.Arrays;
import java.util.List;

/**
 * herald's HTTP/1.1 request decoder (replaces Netty's {@code HttpRequestDecoder}): finds a request head's lines
 * in the buffer, copies the head once and hands it to {@link Http1Parser}, which checks it in the same pass. Emits
 * a {@link RequestHead} per head: alone for a request without a body ({@link RequestHead#full}), else followed by
 * {@code HttpContent}s (Content-Length or chunked framing) ending with a {@code LastHttpContent}; the body's framing
 * is {@link BodyFraming}'s. Limits: a request line over {@code :max-request-line-bytes} is refused 414, header lines
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

    /** nanoTime when the current partial head started arriving, 0 when none is pending (the request timeout). */
    private long partialSince;
    private final Http1Parser parser;
    private final int maxLine;
    private final int maxHeader;
    /** The body after the head, and whether decoding has ended (a refusal). */
    private final BodyFraming body;
    /** The LF of each line of the head being received, relative to its start. */
    private int[] ends = new int[16];
    private int lines;
    /** Bytes of the head being received already searched for line ends. */
    private int scanned;

    public Http1Decoder(ServerConfig config) {
        this(config.maxRequestLineBytes, config.maxHeaderBytes, config.maxBodyBytes);
    }

    Http1Decoder(int maxLine, int maxHeader, long maxBody) {
        super(new HttpDecoderConfig().setInitialBufferSize(16));
        this.maxLine = maxLine;
        this.maxHeader = maxHeader;
        this.body = new BodyFraming(maxLine, maxHeader, maxBody);
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
        if (body.state == BodyFraming.HEAD) {
            head(in, out);
        } else {
            body.decode(in, out);
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
            body.state = BodyFraming.FAILED;
            in.skipBytes(in.readableBytes());
        } else if (parser.chunked) {
            body.state = BodyFraming.CHUNK_SIZE;
        } else if (parser.contentLength > 0) {
            body.length(parser.contentLength);
        }
    }

    private void refuse(ByteBuf in, List<Object> out, Refusal why) {
        out.add(RequestHead.refused(why));
        lines = 0;
        scanned = 0;
        body.state = BodyFraming.FAILED;
        in.skipBytes(in.readableBytes());
    }
}
