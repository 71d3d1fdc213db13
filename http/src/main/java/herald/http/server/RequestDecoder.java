package herald.http.server;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import java.util.List;

/** Netty's request decoder, noting when a request head is partly received (for the request timeout). */
final class RequestDecoder extends HttpRequestDecoder {
    /** nanoTime when the current partial head started arriving, 0 when none is pending. */
    long partialSince;

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
