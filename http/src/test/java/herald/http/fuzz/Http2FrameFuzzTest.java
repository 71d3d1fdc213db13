package herald.http.fuzz;

import clojure.lang.AFn;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.RT;
import com.code_intelligence.jazzer.junit.FuzzTest;
import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import herald.http.server.ServerPipelines;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;

/**
 * Fuzzes the server's h2c path (the preface detector, Netty's HTTP/2 codec behind herald's {@code GuardedCodec},
 * the stream handlers): the client preface, then the fuzzed bytes as frames. Per input: no exception escapes; what
 * the server wrote is a well-formed frame sequence opening with SETTINGS; a connection the server closed sent a
 * GOAWAY first; each request its handler answered got a HEADERS frame unless the connection went away; every
 * buffer is released and the leak detector stays quiet.
 */
class Http2FrameFuzzTest {
    private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final ServerConfig CONFIG = ServerConfig.builder().mode(HandlerMode.EVENT_LOOP)
        .maxHeaderBytes(1024).maxBodyBytes(1000).http2MaxConcurrentStreams(8)
        .idleTimeoutMs(0).requestTimeoutMs(0).headerTimeoutMs(0).build();
    private static final Keyword BODY = Keyword.intern("body");
    private static final int GOAWAY = 7;
    private static final int HEADERS = 1;
    private static final int RST_STREAM = 3;

    @FuzzTest(maxDuration = "2m")
    void frames(byte[] data) {
        List<Throwable> errors = new ArrayList<>();
        int[] handled = {0};
        AFn handler = new AFn() {
            @Override
            public Object invoke(Object req) {
                handled[0]++;
                if (RT.get(req, BODY) instanceof InputStream in) {
                    try (in) {
                        in.transferTo(java.io.OutputStream.nullOutputStream());
                    } catch (IOException e) {
                        // a stream reset while its body was read: the handler's answer goes nowhere
                    }
                }
                return PersistentArrayMap.createAsIfByAssoc(new Object[] {Keyword.intern("status"), 200L, BODY, "ok"});
            }
        };
        EmbeddedChannel ch = ServerPipelines.plaintext(CONFIG, handler, null, errors);
        FuzzChecks checks = new FuzzChecks();
        List<String> others = new ArrayList<>();
        byte[] out;
        boolean open;
        try {
            byte[] in = new byte[PREFACE.length + data.length];
            System.arraycopy(PREFACE, 0, in, 0, PREFACE.length);
            System.arraycopy(data, 0, in, PREFACE.length, data.length);
            checks.write(ch, in, 0, in.length);
            out = FuzzChecks.output(ch, others);
            open = ch.isOpen();
        } finally {
            checks.finish(ch);
        }
        if (!errors.isEmpty()) {
            throw new AssertionError("the server logged an error", errors.get(0));
        }
        int[] counts = countFrames(out);
        if (!open && counts[GOAWAY] == 0) {
            throw new AssertionError("the connection closed without a GOAWAY");
        }
        if (counts[GOAWAY] == 0 && counts[HEADERS] + counts[RST_STREAM] < handled[0]) {
            throw new AssertionError(handled[0] + " requests handled, " + counts[HEADERS] + " HEADERS frames sent");
        }
    }

    /** Frames by type (0-9) in the server's output; fails on a malformed sequence. */
    private static int[] countFrames(byte[] out) {
        int[] counts = new int[256];
        int i = 0;
        boolean first = true;
        while (i < out.length) {
            if (out.length - i < 9) {
                throw new AssertionError("a truncated frame header at " + i);
            }
            int len = (out[i] & 0xff) << 16 | (out[i + 1] & 0xff) << 8 | out[i + 2] & 0xff;
            int type = out[i + 3] & 0xff;
            if (first && type != 4) {
                throw new AssertionError("the server's first frame is type " + type + ", not SETTINGS");
            }
            first = false;
            counts[type]++;
            i += 9 + len;
        }
        if (i != out.length) {
            throw new AssertionError("a frame runs past the output");
        }
        return counts;
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
