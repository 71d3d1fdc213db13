package herald.http.http2;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;

/**
 * After the TLS handshake, adds the HTTP/2 handlers when ALPN chose "h2", else the HTTP/1.1 ones, then removes
 * itself. Reads that arrive before the choice are held and replayed in order.
 */
public final class AlpnSwitch extends ChannelInboundHandlerAdapter {
    private static final String[] PROTOCOLS = {"h2", "http/1.1"};
    private final Http2Host host;
    private final List<Object> held = new ArrayList<>(2);

    public AlpnSwitch(Http2Host host) {
        this.host = host;
    }

    /**
     * A TLS handler offering h2 and http/1.1 by ALPN: a context built without ALPN (every context herald builds, and a
     * wrapped javax.net.ssl.SSLContext) gets the two protocols on its engine; a Netty SslContext that configured
     * ALPN itself is used as built.
     */
    public static SslHandler tlsHandler(SslContext context, io.netty.buffer.ByteBufAllocator alloc) {
        SslHandler handler = context.newHandler(alloc);
        if (context.applicationProtocolNegotiator().protocols().isEmpty()) {
            SSLEngine engine = handler.engine();
            SSLParameters params = engine.getSSLParameters();
            params.setApplicationProtocols(PROTOCOLS);
            engine.setSSLParameters(params);
        }
        return handler;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        held.add(msg);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof SslHandshakeCompletionEvent done) {
            if (!done.isSuccess()) {
                ctx.close();
                return;
            }
            if ("h2".equals(protocol(ctx.pipeline().get(SslHandler.class)))) {
                Http2Pipelines.add(ctx.pipeline(), host);
            } else {
                host.addHttp1(ctx.pipeline(), false);
            }
            List<Object> replay = new ArrayList<>(held);
            held.clear();
            ctx.pipeline().remove(this);
            for (Object m : replay) {
                ctx.fireChannelRead(m);
            }
            if (!replay.isEmpty()) {
                ctx.fireChannelReadComplete();
            }
        }
        ctx.fireUserEventTriggered(evt);
    }

    private static String protocol(SslHandler ssl) {
        String p = ssl.applicationProtocol();
        if (p == null) {
            try {
                p = ssl.engine().getApplicationProtocol();
            } catch (UnsupportedOperationException old) {
                p = null;
            }
        }
        return p;
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        for (Object m : held) {
            io.netty.util.ReferenceCountUtil.release(m);
        }
        held.clear();
    }
}
