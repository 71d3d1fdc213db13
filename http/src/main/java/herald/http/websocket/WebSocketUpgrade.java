package herald.http.websocket;

import clojure.lang.RT;
import herald.http.config.ServerConfig;
import herald.http.server.Hooks;
import herald.http.server.RequestHead;
import herald.http.server.RingKeys;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.group.ChannelGroup;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.websocketx.Utf8FrameValidator;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshakerFactory;
import io.netty.handler.codec.http.websocketx.WebSocketVersion;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketServerExtension;
import java.util.concurrent.Executor;

/** Upgrades an HTTP exchange whose Ring response carries {@code :ring.websocket/listener}. */
public final class WebSocketUpgrade {
    private WebSocketUpgrade() {}

    /** True when {@code req} asks for a WebSocket upgrade (GET, Upgrade: websocket, Connection: upgrade, a key). */
    public static boolean isUpgradeRequest(RequestHead req) {
        return req != null && req.method() == HttpMethod.GET
            && hasToken(req.headers().get(HttpHeaderNames.UPGRADE), "websocket")
            && hasToken(req.headers().get(HttpHeaderNames.CONNECTION), "upgrade")
            && req.headers().contains(HttpHeaderNames.SEC_WEBSOCKET_KEY);
    }

    /**
     * True when {@code req} is an upgrade request naming a {@code Sec-WebSocket-Version} herald does not speak
     * (it speaks 13, and 8 and 7 as Netty does): answered 426 with {@code Sec-WebSocket-Version: 13} (RFC 6455 4.2.2).
     */
    public static boolean unsupportedVersion(RequestHead req) {
        if (!isUpgradeRequest(req)) {
            return false;
        }
        String v = req.headers().get(HttpHeaderNames.SEC_WEBSOCKET_VERSION);
        return v != null && !v.equals("13") && !v.equals("8") && !v.equals("7");
    }

    /** True when the comma-separated header value holds {@code token} (case-insensitive). */
    static boolean hasToken(String header, String token) {
        if (header == null) {
            return false;
        }
        for (String part : header.split(",")) {
            if (part.trim().equalsIgnoreCase(token)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Performs the handshake and replaces the HTTP handler {@code ctx} with the frame handlers. Returns false
     * (and changes nothing) when the request is not a valid upgrade request or the version is unsupported.
     */
    public static boolean upgrade(ChannelHandlerContext ctx, RequestHead req, Object response, Object listenerValue,
                                  Hooks hooks, ServerConfig config, Executor executor, ChannelGroup channels) {
        if (!isUpgradeRequest(req) || hooks.websocketAdapter == null) {
            return false;
        }
        Object proto = RT.get(response, RingKeys.WS_PROTOCOL);
        WebSocketServerExtension deflate = Compression.negotiate(req.headers(), config);
        WebSocketDecoderConfig dc = WebSocketDecoderConfig.newBuilder()
            .maxFramePayloadLength(config.websocketMaxFrameBytes)
            .allowExtensions(deflate != null) // RSV1 marks a compressed message; without the extension it fails
            // WebSocketFrameHandler sends the close frame: the decoder's own would bypass the encoder after it
            .closeOnProtocolViolation(false)
            .build();
        String host = req.headers().get(HttpHeaderNames.HOST, "localhost");
        WebSocketServerHandshakerFactory factory = new WebSocketServerHandshakerFactory(
            "ws://" + host + req.uri(), proto == null ? null : proto.toString(), dc);
        // Netty's handshaker takes an HttpRequest: a view of the head, made for the upgrade only
        FullHttpRequest full = new DefaultFullHttpRequest(req.version(), req.method(), req.uri(),
            Unpooled.EMPTY_BUFFER, req.headers(), EmptyHttpHeaders.INSTANCE);
        WebSocketServerHandshaker handshaker = factory.newHandshaker(full);
        if (handshaker == null || handshaker.version() == WebSocketVersion.V00) {
            return false; // an unsupported version, or none (hixie-76, which has no Sec-WebSocket-Key)
        }
        WebSocketListener listener = (WebSocketListener) hooks.websocketAdapter.invoke(listenerValue);
        ChannelPipeline p = ctx.pipeline();
        p.addBefore(ctx.name(), "herald-http-encoder", new HttpResponseEncoder());
        HeraldWebSocket socket = new HeraldWebSocket(ctx.channel(), listener, executor, config.websocketCloseWaitMs);
        HttpHeaders extra = null;
        if (deflate != null) {
            extra = new DefaultHttpHeaders().add(HttpHeaderNames.SEC_WEBSOCKET_EXTENSIONS,
                Compression.responseHeader(deflate));
        }
        handshaker.handshake(ctx.channel(), full, extra, ctx.channel().newPromise());
        if (deflate != null) {
            // inflate right after the frame decoder, before UTF-8 checks and aggregation; deflate what the socket sends
            p.addBefore(ctx.name(), "herald-ws-inflate", deflate.newExtensionDecoder());
            p.addBefore(ctx.name(), "herald-ws-deflate", deflate.newExtensionEncoder());
        }
        // Netty adds this only in WebSocketServerProtocolHandler: invalid UTF-8 text fails with 1007 (RFC 6455 8.1);
        // like the decoder and the aggregator it only raises the error, WebSocketFrameHandler sends the close frame
        p.addBefore(ctx.name(), "herald-ws-utf8", new Utf8FrameValidator(false));
        p.addBefore(ctx.name(), "herald-ws-aggregator", new WebSocketFrameAggregator(config.websocketMaxFrameBytes));
        p.replace(ctx.name(), "herald-ws", new WebSocketFrameHandler(socket, config.websocketMaxFrameBytes));
        socket.opened();
        return true;
    }
}
