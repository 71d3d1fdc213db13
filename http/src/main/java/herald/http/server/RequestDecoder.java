package herald.http.server;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import java.util.List;

/** Netty's request decoder, noting when a request head is partly received (for the request timeout). */
final class RequestDecoder extends HttpRequestDecoder {
    /** nanoTime when the current partial head started arriving, 0 when none is pending. */
    long partialSince;

    /** The status for a decoder failure: 414 (request line), 431 (headers), else 400. */
    static int statusOf(Throwable cause) {
        if (cause instanceof TooLongHttpLineException) {
            return 414;
        }
        if (cause instanceof TooLongHttpHeaderException || cause instanceof TooLongFrameException) {
            return 431;
        }
        return 400;
    }

    RequestDecoder(HttpDecoderConfig config) {
        super(config);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf buffer, List<Object> out) throws Exception {
        int before = out.size();
        super.decode(ctx, buffer, out);
        boolean gotHead = false;
        for (int i = before; i < out.size(); i++) {
            if (out.get(i) instanceof HttpRequest) {
                gotHead = true;
                break;
            }
        }
        if (gotHead) {
            partialSince = 0;
        } else if (out.size() == before && partialSince == 0) {
            partialSince = System.nanoTime();
        }
    }
}
