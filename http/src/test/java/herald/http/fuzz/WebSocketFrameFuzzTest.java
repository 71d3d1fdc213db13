package herald.http.fuzz;

import clojure.lang.AFn;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import com.code_intelligence.jazzer.junit.FuzzTest;
import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import herald.http.server.ServerPipelines;
import herald.http.websocket.HeraldWebSocket;
import herald.http.websocket.WebSocketListener;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;

/**
 * Fuzzes the WebSocket frame path as herald sets it up after an upgrade (Netty's frame decoder with herald's
 * limits, the UTF-8 validator, the aggregator, herald's frame handler): a real upgrade request through the server
 * pipeline, then the fuzzed bytes as client frames. Per input: no exception escapes; a close frame the server sends
 * first carries 1002, 1007 or 1009 (RFC 6455 7.4.1: never 1011 for what a client sent); a first frame declared
 * larger than {@code :websocket-max-frame-bytes} gets 1009; every buffer is released, the leak detector stays quiet.
 */
class WebSocketFrameFuzzTest {
    static final int MAX_FRAME = 256;
    private static final ServerConfig CONFIG = ServerConfig.builder().mode(HandlerMode.EVENT_LOOP)
        .websocketMaxFrameBytes(MAX_FRAME).idleTimeoutMs(0).requestTimeoutMs(0).headerTimeoutMs(0).http2(false)
        .build();
    private static final byte[] UPGRADE = ("GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII);
    private static final Set<Integer> FAILURE_CODES = Set.of(1002, 1007, 1009);

    private static final WebSocketListener QUIET = new WebSocketListener() {
        public void onOpen(HeraldWebSocket s) {}
        public void onMessage(HeraldWebSocket s, Object m) {}
        public boolean handlesPing() { return false; }
        public void onPing(HeraldWebSocket s, ByteBuffer d) {}
        public void onPong(HeraldWebSocket s, ByteBuffer d) {}
        public void onError(HeraldWebSocket s, Throwable t) {}
        public void onClose(HeraldWebSocket s, int code, String reason) {}
    };

    @FuzzTest(maxDuration = "2m")
    void frames(byte[] data) {
        List<Throwable> errors = new ArrayList<>();
        AFn handler = new AFn() {
            @Override
            public Object invoke(Object req) {
                return PersistentArrayMap.createAsIfByAssoc(new Object[] {
                    Keyword.intern("ring.websocket", "listener"), Boolean.TRUE});
            }
        };
        AFn adapter = new AFn() {
            @Override
            public Object invoke(Object listener) {
                return QUIET;
            }
        };
        EmbeddedChannel ch = ServerPipelines.plaintext(CONFIG, handler, adapter, errors);
        FuzzChecks checks = new FuzzChecks();
        List<String> others = new ArrayList<>();
        byte[] out;
        try {
            checks.write(ch, UPGRADE, 0, UPGRADE.length);
            byte[] head = FuzzChecks.output(ch, others);
            if (!new String(head, StandardCharsets.ISO_8859_1).startsWith("HTTP/1.1 101 ")) {
                throw new AssertionError("the upgrade was not accepted: " + new String(head, StandardCharsets.ISO_8859_1));
            }
            checks.write(ch, data, 0, data.length);
            out = FuzzChecks.output(ch, others);
        } finally {
            checks.finish(ch);
        }
        if (!errors.isEmpty()) {
            throw new AssertionError("the server logged an error", errors.get(0));
        }
        int code = serverCloseCode(out);
        if (code >= 0 && !peerClosedFirst(data) && !FAILURE_CODES.contains(code)) {
            throw new AssertionError("the server failed the connection with close code " + code);
        }
        if (firstFrameOversize(data) && code != 1009) {
            throw new AssertionError("a first frame over " + MAX_FRAME + " bytes got close code " + code + ", not 1009");
        }
    }

    /** The status code of the first close frame the server sent (unmasked frames); -1 without one. */
    private static int serverCloseCode(byte[] out) {
        int i = 0;
        while (i + 2 <= out.length) {
            int op = out[i] & 0x0f;
            int len = out[i + 1] & 0x7f;
            int at = i + 2;
            if (len == 126) {
                len = (out[at] & 0xff) << 8 | out[at + 1] & 0xff;
                at += 2;
            } else if (len == 127) {
                throw new AssertionError("the server sent a frame over 64 KiB");
            }
            if (op == 8) {
                return len >= 2 ? (out[at] & 0xff) << 8 | out[at + 1] & 0xff : 1005;
            }
            i = at + len;
        }
        return -1;
    }

    /**
     * The client sent a close frame (the server then echoes its code) among frames that look valid up to it:
     * FIN-less control frames, RSV bits, unmasked frames and unknown opcodes end the walk.
     */
    private static boolean peerClosedFirst(byte[] data) {
        int i = 0;
        while (i + 2 <= data.length) {
            int b0 = data[i] & 0xff;
            int op = b0 & 0x0f;
            if ((b0 & 0x70) != 0 || (data[i + 1] & 0x80) == 0 || op > 2 && op < 8 || op > 10) {
                return false;
            }
            if (op == 8) {
                return true;
            }
            long len = data[i + 1] & 0x7f;
            int at = i + 2;
            if (len == 126) {
                if (at + 2 > data.length) {
                    return false;
                }
                len = (data[at] & 0xff) << 8 | data[at + 1] & 0xff;
                at += 2;
            } else if (len == 127) {
                return false; // over the limit anyway
            }
            if (len > MAX_FRAME) {
                return false;
            }
            i = at + 4 + (int) len;
        }
        return false;
    }

    /**
     * A valid-looking first frame header (FIN, no RSV, text or binary, masked) declaring more than the limit in the
     * minimal length encoding (RFC 6455 5.2: a longer encoding than needed is a protocol error, 1002, not 1009).
     */
    static boolean firstFrameOversize(byte[] data) {
        if (data.length < 2 || (data[0] & 0xff) != 0x81 && (data[0] & 0xff) != 0x82 || (data[1] & 0x80) == 0) {
            return false;
        }
        int len7 = data[1] & 0x7f;
        if (len7 == 126) {
            return data.length >= 4 && ((data[2] & 0xff) << 8 | data[3] & 0xff) > MAX_FRAME;
        }
        if (len7 == 127 && data.length >= 10) {
            long n = 0;
            for (int i = 2; i < 10; i++) {
                n = n << 8 | data[i] & 0xff;
            }
            return n > 0xffff; // the top bit set makes n negative: not a length (RFC 6455 5.2)
        }
        return false;
    }

    @org.junit.jupiter.api.BeforeAll
    static void warmUp() {
        FuzzChecks.warmUp();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        FuzzChecks.assertNoLeaks();
    }
}
