import clojure.lang.AFn;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import herald.http.server.ServerPipelines;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;

/**
 * Bytes allocated per request by herald.http's HTTP/1.1 server path on one thread: the server's plaintext pipeline
 * (decoder, parser, connection, Ring request, handler, response writer) on an EmbeddedChannel, event-loop mode,
 * a constant Ring response. Counted with com.sun.management.ThreadMXBean#getThreadAllocatedBytes around ROUNDS
 * batches of DEPTH pipelined requests after a warm-up. Prints one line per request kind.
 */
public class HttpAlloc {
    static final Object RESPONSE = PersistentArrayMap.createAsIfByAssoc(new Object[] {
        Keyword.intern("status"), 200L,
        Keyword.intern("headers"), PersistentArrayMap.createAsIfByAssoc(new Object[] {"Content-Type", "text/plain"}),
        Keyword.intern("body"), "Hello, World!"});

    public static void main(String[] args) {
        int warm = Integer.parseInt(System.getProperty("warm", "20000"));
        int rounds = Integer.parseInt(System.getProperty("rounds", "20000"));
        int depth = 16;
        String get = "GET /plaintext HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: wrk\r\n"
            + "Accept: text/plain,text/html;q=0.9\r\nConnection: keep-alive\r\n\r\n";
        String post = "POST /echo?x=1 HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type: text/plain\r\n"
            + "Content-Length: 13\r\n\r\nHello, World!";
        String chunked = "POST /echo HTTP/1.1\r\nHost: localhost:8080\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "d\r\nHello, World!\r\n0\r\n\r\n";
        for (String[] kind : new String[][] {{"get", get}, {"post", post}, {"chunked", chunked}}) {
            byte[] batch = kind[1].repeat(depth).getBytes(StandardCharsets.ISO_8859_1);
            EmbeddedChannel ch = ServerPipelines.plaintext(ServerConfig.builder().mode(HandlerMode.EVENT_LOOP).build(),
                new AFn() {
                    @Override
                    public Object invoke(Object req) {
                        return RESPONSE;
                    }
                }, null, new ArrayList<>());
            long[] outBytes = {0};
            run(ch, batch, warm, outBytes);
            var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long id = Thread.currentThread().threadId();
            outBytes[0] = 0;
            long before = mx.getThreadAllocatedBytes(id);
            run(ch, batch, rounds, outBytes);
            long after = mx.getThreadAllocatedBytes(id);
            long requests = (long) rounds * depth;
            System.out.printf("alloc kind=%s bytes_per_request=%.1f response_bytes=%d requests=%d%n", kind[0],
                (after - before) / (double) requests, outBytes[0] / requests, requests);
            ch.finishAndReleaseAll();
        }
    }

    private static void run(EmbeddedChannel ch, byte[] batch, int rounds, long[] outBytes) {
        for (int r = 0; r < rounds; r++) {
            ByteBuf in = Unpooled.wrappedBuffer(batch);
            ch.writeInbound(in);
            ch.runPendingTasks();
            for (Object m; (m = ch.readOutbound()) != null; ) {
                if (m instanceof ByteBuf b) {
                    outBytes[0] += b.readableBytes();
                }
                ReferenceCountUtil.release(m);
            }
            if (!ch.isOpen()) {
                throw new IllegalStateException("the server closed the connection");
            }
        }
    }
}
