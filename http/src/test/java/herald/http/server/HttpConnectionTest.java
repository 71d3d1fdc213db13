package herald.http.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import herald.http.http1.Http1Decoder;
import clojure.lang.AFn;
import clojure.lang.IFn;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** HttpConnection and ResponseWriter on an EmbeddedChannel, with the handler on the event loop. */
class HttpConnectionTest {
    private static final Keyword STATUS = RingKeys.STATUS;
    private static final Keyword BODY = RingKeys.BODY;
    private static final Keyword HEADERS = RingKeys.HEADERS;

    private final List<Throwable> errors = new ArrayList<>();
    private final AtomicReference<IPersistentMap> lastRequest = new AtomicReference<>();
    private EmbeddedChannel ch;

    private static IPersistentMap map(Object... kv) {
        return PersistentArrayMap.createAsIfByAssoc(kv);
    }

    private EmbeddedChannel channel(IFn handler, ServerConfig.Builder config) {
        ServerConfig cfg = config.mode(HandlerMode.EVENT_LOOP).idleTimeoutMs(0).requestTimeoutMs(0).build();
        IFn logger = new AFn() {
            @Override
            public Object invoke(Object t, Object req) {
                errors.add((Throwable) t);
                return null;
            }
        };
        ServerContext ctx = new ServerContext(cfg, new Hooks(handler, logger, null, null), null,
            Executors.newVirtualThreadPerTaskExecutor(), new DefaultChannelGroup(GlobalEventExecutor.INSTANCE));
        Http1Decoder decoder = new Http1Decoder(cfg);
        ch = new EmbeddedChannel(decoder, new HttpConnection(ctx, decoder));
        return ch;
    }

    private IFn respond(Object response) {
        return new AFn() {
            @Override
            public Object invoke(Object req) {
                lastRequest.set((IPersistentMap) req);
                return response;
            }
        };
    }

    private String exchange(String request) {
        ch.writeInbound(ch.alloc().buffer().writeBytes(request.getBytes(StandardCharsets.ISO_8859_1)));
        StringBuilder out = new StringBuilder();
        for (ByteBuf b; (b = ch.readOutbound()) != null; ) {
            out.append(b.toString(StandardCharsets.ISO_8859_1));
            b.release();
        }
        return out.toString();
    }

    @BeforeAll
    static void watchLeaks() {
        LeakWatcher.install();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        assertEquals(List.of(), LeakWatcher.leaks(), "Netty reported leaks");
    }

    @AfterEach
    void close() {
        if (ch != null) {
            ch.finishAndReleaseAll();
        }
    }

    /** The messages written for {@code request}, ByteBufs as text, file regions as "region:position+count". */
    private List<String> written(String request) {
        ch.writeInbound(ch.alloc().buffer().writeBytes(request.getBytes(StandardCharsets.ISO_8859_1)));
        List<String> out = new ArrayList<>();
        for (Object m; (m = ch.readOutbound()) != null; ) {
            if (m instanceof ByteBuf b) {
                if (b.isReadable()) {
                    out.add(b.toString(StandardCharsets.ISO_8859_1));
                }
                b.release();
            } else if (m instanceof io.netty.channel.DefaultFileRegion r) {
                out.add("region:" + r.position() + "+" + r.count());
                r.release();
            } else {
                out.add(m.getClass().getSimpleName());
            }
        }
        return out;
    }

    @Test
    void fileBodiesGoOutAsFileRegionsOnPlaintext() throws Exception {
        java.io.File f = java.io.File.createTempFile("herald-region", ".txt");
        f.deleteOnExit();
        java.nio.file.Files.writeString(f.toPath(), "0123456789");
        channel(respond(map(STATUS, 200L, BODY, f)), ServerConfig.builder());
        List<String> whole = written("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assertEquals(2, whole.size(), whole.toString());
        assertTrue(whole.get(0).contains("Content-Length: 10\r\n"), whole.get(0));
        assertEquals("region:0+10", whole.get(1));
        ch.finishAndReleaseAll();
        channel(respond(map(STATUS, 206L, BODY, new herald.http.files.FileParts(List.of(
            "A".getBytes(StandardCharsets.US_ASCII), new herald.http.files.FileRange(f, 2, 3),
            "B".getBytes(StandardCharsets.US_ASCII), new herald.http.files.FileRange(f, 7, 1))))),
            ServerConfig.builder());
        List<String> parts = written("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assertEquals(4, parts.size(), parts.toString());
        assertTrue(parts.get(0).contains("Content-Length: 6\r\n") && parts.get(0).endsWith("\r\n\r\nA"), parts.get(0));
        assertEquals(List.of("region:2+3", "B", "region:7+1"), parts.subList(1, 4));
    }

    @Test
    void fixedResponseHasStatusLengthDateServerAndBody() {
        channel(respond(map(STATUS, 200L, HEADERS, map("Content-Type", "text/plain"), BODY, "hello")),
            ServerConfig.builder());
        String out = exchange("GET /a?b=1 HTTP/1.1\r\nHost: h:1\r\n\r\n");
        assertTrue(out.startsWith("HTTP/1.1 200 OK\r\n"), out);
        assertTrue(out.contains("Content-Type: text/plain\r\n"), out);
        assertTrue(out.contains("Content-Length: 5\r\n"), out);
        assertTrue(out.contains("Server: herald\r\n"), out);
        assertTrue(out.contains("Date: "), out);
        assertTrue(out.endsWith("\r\n\r\nhello"), out);
        assertTrue(ch.isActive(), "HTTP/1.1 keeps the connection open");
    }

    @Test
    void requestMapFollowsRing() throws Exception {
        channel(respond(map(STATUS, 204L)), ServerConfig.builder());
        exchange("POST /p%20q?x=%41 HTTP/1.1\r\nHost: example.org:8080\r\nX-A: 1\r\nx-a: 2\r\nCookie: a=1\r\n"
            + "Cookie: b=2\r\nContent-Length: 3\r\n\r\nabc");
        IPersistentMap req = lastRequest.get();
        assertEquals("/p%20q", req.valAt(RingKeys.URI));
        assertEquals("x=%41", req.valAt(RingKeys.QUERY_STRING));
        assertEquals("example.org", req.valAt(RingKeys.SERVER_NAME));
        assertEquals(RingKeys.POST, req.valAt(RingKeys.REQUEST_METHOD));
        assertEquals("HTTP/1.1", req.valAt(RingKeys.PROTOCOL));
        IPersistentMap headers = (IPersistentMap) req.valAt(HEADERS);
        assertEquals("1,2", headers.valAt("x-a"));
        assertEquals("a=1; b=2", headers.valAt("cookie"));
        assertEquals(map("host", "example.org:8080", "x-a", "1,2", "cookie", "a=1; b=2", "content-length", "3"),
            headers, "the lazy headers map equals the realized one");
        InputStream body = assertInstanceOf(InputStream.class, req.valAt(BODY));
        assertEquals("abc", new String(body.readAllBytes(), StandardCharsets.UTF_8));
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrderInOneFlush() {
        channel(new AFn() {
            @Override
            public Object invoke(Object req) {
                return map(STATUS, 200L, BODY, ((IPersistentMap) req).valAt(RingKeys.URI));
            }
        }, ServerConfig.builder());
        ch.writeInbound(ch.alloc().buffer().writeBytes(
            "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
        ByteBuf first = ch.readOutbound();
        String out = first.toString(StandardCharsets.US_ASCII);
        first.release();
        assertNull(ch.readOutbound(), "both responses went out in one buffer");
        assertTrue(out.indexOf("\r\n\r\n/1") < out.indexOf("\r\n\r\n/2"), out);
    }

    @Test
    void headGetsLengthWithoutBody() {
        channel(respond(map(STATUS, 200L, BODY, "twelve bytes")), ServerConfig.builder());
        String out = exchange("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n");
        assertTrue(out.contains("Content-Length: 12\r\n"), out);
        assertTrue(out.endsWith("\r\n\r\n"), out);
    }

    @Test
    void oversizedBodyIs413AndClose() {
        channel(respond(map(STATUS, 200L)), ServerConfig.builder().maxBodyBytes(4));
        String out = exchange("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello");
        assertTrue(out.startsWith("HTTP/1.1 413 "), out);
        assertTrue(out.contains("Connection: close\r\n"), out);
        assertNull(lastRequest.get(), "the handler never ran");
    }

    @Test
    void malformedRequestIs400() {
        channel(respond(map(STATUS, 200L)), ServerConfig.builder());
        String out = exchange("NOT HTTP AT ALL\r\n\r\n");
        assertTrue(out.startsWith("HTTP/1.1 400 "), out);
        assertTrue(out.contains("Connection: close\r\n"), out);
    }

    @Test
    void oversizedHeadersAre431() {
        channel(respond(map(STATUS, 200L)), ServerConfig.builder().maxHeaderBytes(256));
        String out = exchange("GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + "b".repeat(1000) + "\r\n\r\n");
        assertTrue(out.startsWith("HTTP/1.1 431 "), out);
    }

    @Test
    void handlerExceptionIs500WithoutDetailAndIsLogged() {
        channel(new AFn() {
            @Override
            public Object invoke(Object req) {
                throw new IllegalStateException("secret");
            }
        }, ServerConfig.builder());
        String out = exchange("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        assertTrue(out.startsWith("HTTP/1.1 500 "), out);
        assertFalse(out.contains("secret"), out);
        assertEquals(1, errors.size());
        assertEquals("secret", errors.get(0).getMessage());
    }

    @Test
    void http10ClosesUnlessKeepAlive() {
        channel(respond(map(STATUS, 200L, BODY, "x")), ServerConfig.builder());
        String keep = exchange("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assertTrue(keep.contains("Connection: keep-alive\r\n"), keep);
        assertTrue(ch.isActive());
        String close = exchange("GET / HTTP/1.0\r\n\r\n");
        assertTrue(close.contains("Connection: close\r\n"), close);
        ch.runPendingTasks();
        assertFalse(ch.isActive(), "closed after an HTTP/1.0 response without keep-alive");
    }

    @Test
    void multiValueHeadersAndCharsets() {
        channel(respond(map(STATUS, 201L,
            HEADERS, map("X-M", PersistentVector.create("a", "b"), "Content-Type", "text/plain;charset=ISO-8859-1"),
            BODY, "é")), ServerConfig.builder());
        String out = exchange("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        assertTrue(out.contains("X-M: a\r\nX-M: b\r\n"), out);
        assertTrue(out.contains("Content-Length: 1\r\n"), out);
        assertTrue(out.endsWith("\r\n\r\né"), out);
    }

    @Test
    void invalidResponsesAre500() {
        channel(respond(map(STATUS, 200L, HEADERS, map("X", "a\r\nInjected: yes"))), ServerConfig.builder());
        String out = exchange("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        assertTrue(out.startsWith("HTTP/1.1 500 "), out);
        assertFalse(out.contains("Injected"), out);
        assertNotNull(errors.get(0));
    }
}
