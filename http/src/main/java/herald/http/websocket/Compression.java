package herald.http.websocket;

import herald.http.config.ServerConfig;
import io.netty.handler.codec.compression.DecompressionException;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketExtensionData;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketExtensionUtil;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketServerExtension;
import io.netty.handler.codec.http.websocketx.extensions.compression.PerMessageDeflateServerExtensionHandshaker;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketExtensionDecoder;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketExtensionEncoder;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * permessage-deflate (RFC 7692) negotiation: the first offer in the client's {@code Sec-WebSocket-Extensions} that
 * Netty's handshaker accepts wins. The server keeps a 32 KiB window (the JDK's zlib cannot use another, so an offer
 * that demands {@code server_max_window_bits} below 15 is declined, as RFC 7692 7.1.2.1 allows; one naming 15 is
 * accepted and answered with {@code server_max_window_bits=15}, as 7.1.2.1 requires), grants
 * {@code server_no_context_takeover} when asked, takes the client's {@code client_max_window_bits}, and inflates a
 * frame into at most {@link #inflateBound} bytes: a deflate bomb fails with 1009 and never allocates more; the
 * frame handler then holds each inflated message to {@code websocketMaxFrameBytes} exactly.
 */
final class Compression {
    /** zlib's default level: a fair trade of CPU for size on chat-like text. */
    static final int LEVEL = 6;

    private Compression() {}

    /** The extension to install for a request with {@code headers}, or null when compression is off or no offer is acceptable. */
    static WebSocketServerExtension negotiate(HttpHeaders headers, ServerConfig config) {
        String offers = headers.get(HttpHeaderNames.SEC_WEBSOCKET_EXTENSIONS);
        if (!config.websocketCompression || offers == null) {
            return null;
        }
        PerMessageDeflateServerExtensionHandshaker handshaker = new PerMessageDeflateServerExtensionHandshaker(
            LEVEL, false, PerMessageDeflateServerExtensionHandshaker.MAX_WINDOW_SIZE, true, false,
            inflateBound(config.websocketMaxFrameBytes));
        try {
            for (WebSocketExtensionData offer : WebSocketExtensionUtil.extractExtensions(offers)) {
                boolean window15 = "15".equals(offer.parameters().get(SERVER_MAX_WINDOW));
                // Netty declines any server_max_window_bits unless told to use it, which the JDK's zlib cannot:
                // 15 is the window herald deflates with anyway, so the offer is taken without it and answered with it
                WebSocketServerExtension ext = handshaker.handshakeExtension(window15 ? withoutServerWindow(offer) : offer);
                if (ext != null) {
                    return window15 ? new ServerWindow15(ext) : ext;
                }
            }
        } catch (RuntimeException malformed) {
            return null; // an unparsable offer (bad window bits): no compression rather than no WebSocket
        }
        return null;
    }

    private static final String SERVER_MAX_WINDOW = "server_max_window_bits";

    private static WebSocketExtensionData withoutServerWindow(WebSocketExtensionData offer) {
        Map<String, String> params = new LinkedHashMap<>(offer.parameters());
        params.remove(SERVER_MAX_WINDOW);
        return new WebSocketExtensionData(offer.name(), params);
    }

    /** An accepted extension whose offer named {@code server_max_window_bits=15}: the answer names it too. */
    private record ServerWindow15(WebSocketServerExtension ext) implements WebSocketServerExtension {
        @Override
        public WebSocketExtensionData newReponseData() {
            WebSocketExtensionData data = ext.newReponseData();
            Map<String, String> params = new LinkedHashMap<>(data.parameters());
            params.put(SERVER_MAX_WINDOW, "15");
            return new WebSocketExtensionData(data.name(), params);
        }

        @Override
        public int rsv() {
            return ext.rsv();
        }

        @Override
        public WebSocketExtensionEncoder newExtensionEncoder() {
            return ext.newExtensionEncoder();
        }

        @Override
        public WebSocketExtensionDecoder newExtensionDecoder() {
            return ext.newExtensionDecoder();
        }
    }

    /**
     * What Netty's inflater may allocate for one frame: it gives up early (it asks for room for twice the input left
     * before it is needed), so three times the limit lets every message within the limit through, and bounds a bomb.
     */
    static int inflateBound(int limit) {
        return (int) Math.min(3L * limit, Integer.MAX_VALUE - 8);
    }

    /** The {@code Sec-WebSocket-Extensions} value answering an accepted offer, e.g. {@code permessage-deflate; server_no_context_takeover}. */
    static String responseHeader(WebSocketServerExtension ext) {
        WebSocketExtensionData data = ext.newReponseData();
        StringBuilder sb = new StringBuilder(data.name());
        for (Map.Entry<String, String> p : data.parameters().entrySet()) {
            sb.append("; ").append(p.getKey());
            if (p.getValue() != null) {
                sb.append('=').append(p.getValue());
            }
        }
        return sb.toString();
    }

    /** True when {@code cause} is the inflater stopping at the size limit (a message too big, or a bomb). */
    static boolean tooBig(Throwable cause) {
        return cause instanceof DecompressionException d && d.getMessage() != null
            && d.getMessage().contains("maximum size");
    }
}
