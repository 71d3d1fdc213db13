package herald.http.http2;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2ResetFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2StreamFrame;
import io.netty.util.ReferenceCountUtil;

/**
 * The first handler of a stream's pipeline. Inbound: HEADERS become the request head ({@link Http2Request}; a
 * whole request when they end the stream), DATA becomes body content, the end of the stream becomes the last
 * content (trailers are dropped); a request
 * without the pseudo-headers it needs, or with a {@code :path} that is not origin-form, resets the stream with
 * PROTOCOL_ERROR ({@link Http2Request#wellFormed}). Outbound:
 * frames pass; a readable ByteBuf (a streamed or file body) becomes a DATA frame and an empty one ends the stream,
 * so the HTTP/1.1 body writers work unchanged; anything written after the end is dropped.
 */
public final class StreamAdapter extends ChannelDuplexHandler {
    private final int maxTargetBytes;
    private boolean headSeen;
    /** The request was malformed and the stream reset: later frames are dropped. */
    private boolean rejected;
    /** The write of the frame that ended the stream; null until then. */
    private ChannelFuture ended;
    /** The client ended its side of the stream (END_STREAM on HEADERS or DATA). */
    private boolean inputEnded;

    public StreamAdapter(int maxTargetBytes) {
        this.maxTargetBytes = maxTargetBytes;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (rejected) {
            ReferenceCountUtil.release(msg);
        } else if (msg instanceof Http2HeadersFrame h) {
            if (!headSeen) {
                headSeen = true;
                if (!Http2Request.wellFormed(h.headers())) {
                    // malformed (RFC 9113 8.1.1, 8.3.1): a stream error; the exchange handler never sees it
                    rejected = true;
                    ctx.writeAndFlush(new DefaultHttp2ResetFrame(Http2Error.PROTOCOL_ERROR));
                    return;
                }
                // a HEADERS frame that ends the stream is the whole request: one message (RequestHead.full)
                inputEnded = h.isEndStream();
                ctx.fireChannelRead(Http2Request.of(h.headers(), maxTargetBytes, h.isEndStream()));
            } else if (h.isEndStream()) {
                inputEnded = true;
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT); // trailers end the body
            }
        } else if (msg instanceof Http2DataFrame d) {
            ByteBuf content = d.content();
            inputEnded |= d.isEndStream();
            ctx.fireChannelRead(d.isEndStream() ? new DefaultLastHttpContent(content) : new DefaultHttpContent(content));
        } else {
            ReferenceCountUtil.release(msg); // resets, window updates, unknown frames: the stream's channel reacts itself
        }
    }

    /**
     * A stream error the codec raised (a protocol violation on this stream): the multiplexer resets the stream with
     * the error's code right after this; passed on, the exchange handler would close the stream first (CANCEL).
     */
    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!(cause instanceof Http2Exception)) {
            ctx.fireExceptionCaught(cause);
        }
    }

    /**
     * The stream closes. When the whole response went out while the client was still sending its body (an answer
     * before the body: a 413, a handler that did not read it), the client is asked to stop with RST_STREAM NO_ERROR,
     * which it must not take as a reason to discard the response (RFC 9113 8.1); Netty's own close would reset
     * with CANCEL, and clients (curl) then drop the answer they already received.
     */
    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        if (ended != null && !inputEnded && !rejected && ctx.channel().isActive()) {
            if (!ended.isDone()) { // the end is still waiting for window: a reset now would discard it
                ended.addListener(f -> close(ctx, promise));
                return;
            }
            inputEnded = true;
            ctx.writeAndFlush(new DefaultHttp2ResetFrame(Http2Error.NO_ERROR));
        }
        ctx.close(promise);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (ended != null) {
            // after the end: completes when the end is written, so a close that waits for it cannot cut the response
            ReferenceCountUtil.release(msg);
            ended.addListener(f -> promise.trySuccess());
            return;
        }
        Object frame = msg;
        if (msg instanceof ByteBuf b) {
            boolean last = !b.isReadable();
            if (last) {
                b.release();
            }
            frame = new DefaultHttp2DataFrame(last ? Unpooled.EMPTY_BUFFER : b, last);
        } else if (!(msg instanceof Http2StreamFrame)) {
            ReferenceCountUtil.release(msg);
            promise.tryFailure(new IllegalArgumentException("not an HTTP/2 stream frame: " + msg.getClass().getName()));
            return;
        }
        if (frame instanceof Http2HeadersFrame h && h.isEndStream() || frame instanceof Http2DataFrame d && d.isEndStream()) {
            ChannelPromise p = promise.isVoid() ? ctx.newPromise() : promise;
            ended = p;
            ctx.write(frame, p);
            return;
        }
        ctx.write(frame, promise);
    }
}
