package herald.http.http2;

import herald.http.server.RequestHead;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.HttpConversionUtil;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * Sits between the HTTP/1.1 decoder and the exchange handler for the first request of a plaintext connection:
 * a bodiless HTTP/1.1 request with {@code Upgrade: h2c}, {@code Connection: Upgrade, HTTP2-Settings} and one valid
 * {@code HTTP2-Settings} is answered 101, the connection becomes HTTP/2 and the request is served as stream 1
 * (RFC 7540 3.2). Any other first request passes on unchanged (an upgrade with a body is served over HTTP/1.1,
 * which RFC 9110 7.8 allows). Then the watcher removes itself: later requests never see it.
 */
public final class UpgradeWatcher extends ChannelInboundHandlerAdapter {
    private static final byte[] SWITCHING = ("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
        + "Upgrade: h2c\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    private final Http2Host host;
    private final String decoderName;
    private RequestHead upgrade;
    private Http2Settings settings;

    public UpgradeWatcher(Http2Host host, String decoderName) {
        this.host = host;
        this.decoderName = decoderName;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Http2Exception {
        if (upgrade == null && msg instanceof RequestHead r) {
            settings = upgradable(r);
            if (settings != null) {
                upgrade = r;
                if (r.full()) {
                    switchToHttp2(ctx);
                }
                return;
            }
            ctx.pipeline().remove(this);
            ctx.fireChannelRead(msg);
        } else if (upgrade != null) {
            boolean last = msg instanceof LastHttpContent;
            ReferenceCountUtil.release(msg);
            if (last) {
                switchToHttp2(ctx);
            }
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    /** The client's settings when {@code r} asks for a valid h2c upgrade, else null. */
    static Http2Settings upgradable(RequestHead r) {
        HttpHeaders hs = r.headers();
        if (r.refusal() != null || r.version() != HttpVersion.HTTP_1_1
            || !hs.containsValue(HttpHeaderNames.UPGRADE, "h2c", true)
            || !hs.containsValue(HttpHeaderNames.CONNECTION, "upgrade", true)
            || hs.containsValue(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED, true)
            || Long.parseLong(hs.get(HttpHeaderNames.CONTENT_LENGTH, "0")) != 0
            || hs.getAll("HTTP2-Settings").size() != 1 || !hs.contains(HttpHeaderNames.HOST)) {
            return null;
        }
        return decodeSettings(hs.get("HTTP2-Settings"));
    }

    /** The SETTINGS payload in {@code value} (base64url, RFC 7540 3.2.1), or null when it is not one. */
    static Http2Settings decodeSettings(String value) {
        try {
            byte[] b = Base64.getUrlDecoder().decode(value.trim());
            if (b.length % 6 != 0) {
                return null;
            }
            Http2Settings s = new Http2Settings();
            for (int i = 0; i < b.length; i += 6) {
                char id = (char) (((b[i] & 0xff) << 8) | (b[i + 1] & 0xff));
                long v = ((long) (b[i + 2] & 0xff) << 24) | ((b[i + 3] & 0xff) << 16) | ((b[i + 4] & 0xff) << 8)
                    | (b[i + 5] & 0xff);
                s.put(id, Long.valueOf(v));
            }
            return s;
        } catch (IllegalArgumentException bad) {
            return null;
        }
    }

    private void switchToHttp2(ChannelHandlerContext ctx) throws Http2Exception {
        ChannelPipeline p = ctx.pipeline();
        ctx.writeAndFlush(Unpooled.wrappedBuffer(SWITCHING));
        host.removeHttp1(p);
        p.remove(this);
        Http2FrameCodec codec = Http2Pipelines.add(p, host);
        codec.onHttpServerUpgrade(settings);
        RequestHead head = upgrade;
        // Netty's conversion takes an HttpRequest: a view of the head for this once-per-connection step
        DefaultHttpRequest r = new DefaultHttpRequest(head.version(), head.method(), head.uri(), head.headers());
        r.headers().set(HttpConversionUtil.ExtensionHeaderNames.SCHEME.text(), "http");
        Http2Headers h = HttpConversionUtil.toHttp2Headers(r, true);
        h.remove(HttpConversionUtil.ExtensionHeaderNames.SCHEME.text());
        codec.decoder().frameListener().onHeadersRead(p.context(codec), 1, h, 0, true);
        p.remove(decoderName); // bytes already read after the request (the client preface) go to the codec
    }
}
