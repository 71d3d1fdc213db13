package herald.http.http1;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import herald.http.server.LeakWatcher;
import herald.http.server.Refusal;
import herald.http.server.RefusalException;
import herald.http.server.RequestHead;
import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@link Http1Decoder} and {@link Http1Parser} on an EmbeddedChannel: what they accept, split anywhere, and refuse. */
class Http1DecoderTest {
    static final int MAX_LINE = 256;
    static final int MAX_HEADER = 1024;
    static final long MAX_BODY = 1000;

    @BeforeAll
    static void watchLeaks() {
        LeakWatcher.install();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        assertEquals(List.of(), LeakWatcher.leaks(), "Netty reported leaks");
    }

    /** Feeds {@code text} cut at {@code cuts}; returns the messages (the caller releases them). */
    static List<Object> decode(String text, int... cuts) {
        EmbeddedChannel ch = new EmbeddedChannel(new Http1Decoder(MAX_LINE, MAX_HEADER, MAX_BODY));
        byte[] b = text.getBytes(StandardCharsets.ISO_8859_1);
        int from = 0;
        for (int cut : cuts) {
            ch.writeInbound(ch.alloc().buffer().writeBytes(b, from, cut - from));
            from = cut;
        }
        ch.writeInbound(ch.alloc().buffer().writeBytes(b, from, b.length - from));
        List<Object> out = new ArrayList<>();
        for (Object m; (m = ch.readInbound()) != null; ) {
            out.add(m);
        }
        ch.finishAndReleaseAll();
        return out;
    }

    /**
     * The messages as one line each, independent of how the input was cut: a head's status, method, target,
     * version and headers; then the body bytes of the contents up to the last one; releases them.
     */
    static List<String> describe(List<Object> msgs) {
        List<String> lines = new ArrayList<>();
        StringBuilder body = null;
        for (Object m : msgs) {
            if (m instanceof RequestHead r) {
                StringBuilder s = new StringBuilder("HEAD ").append(r.status());
                if (r.status() == 0 || r.status() == 100) {
                    s.append(' ').append(r.method()).append(' ').append(r.uri()).append(' ').append(r.version());
                    Http1Headers hs = (Http1Headers) r.headers();
                    for (int i = 0; i < hs.count(); i++) {
                        s.append(" [").append(hs.name(i)).append('=').append(hs.value(i)).append(']');
                    }
                }
                lines.add(s.toString());
            }
            if (m instanceof HttpContent c) {
                if (c.decoderResult().isFailure()) {
                    lines.add("FAIL " + ((RefusalException) c.decoderResult().cause()).refusal.status);
                } else {
                    body = body == null ? new StringBuilder() : body;
                    body.append(c.content().toString(StandardCharsets.ISO_8859_1));
                    if (c instanceof LastHttpContent) {
                        lines.add("BODY " + body);
                        body = null;
                    }
                }
            }
            ReferenceCountUtil.release(m);
        }
        if (body != null) {
            lines.add("PARTIAL " + body);
        }
        return lines;
    }

    static int status(String text) {
        List<String> d = describe(decode(text));
        for (String line : d) {
            if (line.startsWith("FAIL ")) {
                return Integer.parseInt(line.substring(5));
            }
        }
        assertTrue(!d.isEmpty() && d.get(0).startsWith("HEAD "), text + " -> " + d);
        return Integer.parseInt(d.get(0).split(" ")[1]);
    }

    @Test
    void parsesAHeadWithoutABodyAsOneMessage() {
        List<Object> out = decode("GET /p/q?a=1&b HTTP/1.1\r\nHost: Example.org:8080\r\nX-Mixed-Case:  v 1 \t\r\n"
            + "accept: */*\r\nX-Empty:\r\n\r\n");
        assertEquals(1, out.size());
        RequestHead r = assertInstanceOf(RequestHead.class, out.get(0));
        assertTrue(r.full(), "no body: the head is the whole request, one message");
        assertEquals(0, r.status());
        assertEquals(HttpMethod.GET, r.method());
        assertEquals("/p/q?a=1&b", r.uri());
        assertEquals("/p/q", r.path());
        assertEquals("a=1&b", r.query());
        assertEquals(HttpVersion.HTTP_1_1, r.version());
        assertEquals("Example.org", r.hostName());
        assertTrue(r.keepAlive());
        assertEquals("Example.org:8080", r.headers().get(HttpHeaderNames.HOST));
        assertEquals("v 1", r.headers().get("x-mixed-case"), "OWS trimmed, inner whitespace kept");
        assertEquals("v 1", r.headers().get("X-MIXED-CASE"), "names compare case-insensitively");
        assertEquals("", r.headers().get("x-empty"));
        assertNull(r.headers().get("x-absent"));
        assertEquals(4, r.headers().size());
        assertEquals("x-mixed-case", ((Http1Headers) r.headers()).name(1), "names are lower-cased");
        r.headers().set("X-Added", "1"); // mutation copies the headers once; reads follow the copy
        assertEquals("1", r.headers().get("x-added"));
        assertEquals("v 1", r.headers().get("x-mixed-case"));
        assertEquals(5, r.headers().size());
    }

    @Test
    void everyByteBoundaryGivesTheSameMessages() {
        String[] texts = {
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "\r\n\r\nGET /a?b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            "POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world",
            "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n"
                + "0\r\nX-Trailer: t\r\n\r\n",
            "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nokGET /3 "
                + "HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET /bad HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\nGET / HTTP/1.1\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY",
        };
        for (String text : texts) {
            List<String> whole = describe(decode(text));
            for (int i = 1; i < text.length(); i++) {
                assertEquals(whole, describe(decode(text, i)), "cut at " + i + " of " + text);
            }
            int[] every = new int[text.length() - 1];
            for (int i = 0; i < every.length; i++) {
                every[i] = i + 1;
            }
            assertEquals(whole, describe(decode(text, every)), "one byte at a time: " + text);
        }
    }

    @Test
    void bodiesAndChunksArriveWhole() {
        assertEquals(List.of("HEAD 0 POST /c HTTP/1.1 [host=x] [transfer-encoding=chunked]", "BODY hello world"),
            describe(decode("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
                + "6 ; a=b\r\n world\r\n0\r\n\r\n")));
        assertEquals(List.of("HEAD 100 PUT /u HTTP/1.1 [host=x] [content-length=3] [expect=100-continue]", "BODY abc"),
            describe(decode("PUT /u HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc")));
        assertEquals(List.of("HEAD 0 POST / HTTP/1.1 [host=x] [content-length=2]", "BODY ok"),
            describe(decode("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\nok")));
    }

    @Test
    void pipelinedBatchComesOutInOrder() {
        StringBuilder batch = new StringBuilder();
        for (int i = 0; i < 16; i++) {
            batch.append("GET /plaintext/").append(i).append(" HTTP/1.1\r\nHost: localhost:8080\r\nAccept: text/plain\r\n\r\n");
        }
        List<Object> out = decode(batch.toString());
        assertEquals(16, out.size());
        for (int i = 0; i < 16; i++) {
            RequestHead r = (RequestHead) out.get(i);
            assertEquals("/plaintext/" + i, r.path());
            assertEquals("localhost", r.hostName());
        }
    }

    @Test
    void refusesWithThePreciseStatus() {
        Object[][] cases = {
            {"GARBAGE\r\n\r\n", 400}, {"GET / HTTP/9.x\r\nHost: x\r\n\r\n", 400},
            {"GET / HTTP/9.9\r\nHost: x\r\n\r\n", 505}, {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
            {"GET / HTTP/1.2\r\nHost: x\r\n\r\n", 400}, {"GET /a http/1.1\r\nHost: x\r\n\r\n", 400},
            {"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400}, {"GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400},
            {"GET /\u0001 HTTP/1.1\r\nHost: x\r\n\r\n", 400}, {"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
            {"get /a HTTP/1.1\r\nHost: x\r\n\r\n", 501}, {"Get /a HTTP/1.1\r\nHost: x\r\n\r\n", 501},
            {"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", 501},
            {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 400}, {"GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n", 400},
            {"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400},
            {"GET / HTTP/1.1\r\nHost: a b:99\r\n\r\n", 400}, {"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
            {"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400}, {"GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n", 400},
            {"GET health HTTP/1.1\r\nHost: x\r\n\r\n", 400}, {"GET /a#f HTTP/1.1\r\nHost: x\r\n\r\n", 400},
            {"GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400}, {"GET ftp://h/p HTTP/1.1\r\nHost: x\r\n\r\n", 400},
            {"GET http://u@h/p HTTP/1.1\r\nHost: x\r\n\r\n", 400}, {"GET http:///p HTTP/1.1\r\nHost: x\r\n\r\n", 400},
            {"GET / HTTP/1.1\nHost: x\n\n", 400}, {"GET / HTTP/1.1\r\nHost: x\n\r\n", 400},
            {"GET / HTTP/1.1\r\nHost: x\r\n\n", 400}, {"GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 400},
            {"GET / HTTP/1.1\r\nHost: x\r\nX: a\u0000b\r\n\r\n", 400}, {"GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400},
            {"GET / HTTP/1.1\r\nHost: x\r\nName : v\r\n\r\n", 400}, {"GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", 400},
            {"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded\r\n\r\n", 400}, {"GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400},
            {"GET / HTTP/1.1\r\nHost: x\r\nNo-Colon\r\n\r\n", 400}, {"GET / HTTP/1.1\r\nHost: x\r\nN\u00e4me: v\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 2\r\n\r\nab", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
            {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", 413},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\nExpect: 100-continue\r\n\r\n", 413},
            {"POST / HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n", 417},
            {"GET /" + "a".repeat(MAX_LINE) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414},
            {"GET /" + "a".repeat(MAX_LINE), 414},
            {"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(MAX_HEADER) + "\r\n\r\n", 431},
            {"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(MAX_HEADER), 431},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\nhello\r\n0\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n", 413},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;" + "e".repeat(MAX_LINE) + "\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer: x\r\n\r\n", 400},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + "t".repeat(MAX_HEADER) + "\r\n\r\n", 431},
        };
        for (Object[] c : cases) {
            assertEquals((int) (Integer) c[1], status((String) c[0]), (String) c[0]);
        }
    }

    @Test
    void acceptsWhatTheRfcAllows() {
        String[] ok = {
            "GET / HTTP/1.0\r\n\r\n", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
            "PROPFIND /d HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", "GET http://h.example:81/p?q=1 HTTP/1.1\r\nHost: o\r\n\r\n",
            "GET HTTPS://h/ HTTP/1.1\r\nHost: o\r\n\r\n", "GET / HTTP/1.1\r\nHost:\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\nX: caf\u00e9 \u0001\t\u007f\r\n\r\n",
            "GET /%7E?x=%20#", // incomplete: nothing yet
        };
        for (String text : ok) {
            List<String> d = describe(decode(text));
            assertTrue(d.isEmpty() || d.get(0).startsWith("HEAD 0 "), text + " -> " + d);
        }
        RequestHead ten = (RequestHead) decode("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").get(0);
        assertTrue(ten.keepAlive());
        RequestHead close = (RequestHead) decode("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").get(0);
        assertTrue(!close.keepAlive());
    }

    @Test
    void anAbsoluteFormTargetGivesHostServerNameAndPath() {
        String[][] cases = {
            {"GET http://h.example:81/p?q=1 HTTP/1.1\r\nHost: o\r\n\r\n", "/p", "q=1", "0"},
            {"GET HTTPS://h.example:81?q=1 HTTP/1.1\r\nHost: o\r\n\r\n", "/", "q=1", "0"},
            // with Expect: 100-continue too (it once kept the whole target as :uri and the received Host)
            {"POST http://h.example:81/p HTTP/1.1\r\nHost: o\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n",
                "/p", null, "100"},
        };
        for (String[] c : cases) {
            List<Object> out = decode(c[0]);
            RequestHead r = (RequestHead) out.get(0);
            assertEquals(Integer.parseInt(c[3]), r.status(), c[0]);
            assertEquals(c[1], r.path(), c[0]);
            assertEquals(c[2], r.query(), c[0]);
            assertEquals("h.example", r.hostName(), c[0]);
            assertEquals("h.example:81", r.headers().get(HttpHeaderNames.HOST), "the target's authority is Host");
            assertTrue(r.uri().toLowerCase(java.util.Locale.ROOT).startsWith("http"), "uri() is the target as sent");
            out.forEach(ReferenceCountUtil::release);
        }
    }

    @Test
    void nothingIsDecodedAfterARefusal() {
        List<String> d = describe(decode("GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"));
        assertEquals(List.of("HEAD 400"), d);
    }

    @Test
    void partialHeadSetsTheRequestTimer() {
        Http1Decoder decoder = new Http1Decoder(MAX_LINE, MAX_HEADER, MAX_BODY);
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        ch.writeInbound(ch.alloc().buffer().writeBytes("GET / HTTP/1.1\r\nHo".getBytes(StandardCharsets.US_ASCII)));
        assertTrue(decoder.partialSince() != 0);
        ch.writeInbound(ch.alloc().buffer().writeBytes("st: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(0, decoder.partialSince());
        ByteBuf none = ch.readInbound() instanceof RequestHead ? null : ch.alloc().buffer();
        assertNull(none);
        ch.finishAndReleaseAll();
    }

    /** The refusal carried by the first refused message of {@code text} (head or body), cut at {@code cuts}. */
    static Refusal refusal(String text, int... cuts) {
        Refusal found = null;
        for (Object m : decode(text, cuts)) {
            if (found == null && m instanceof RequestHead h) {
                found = h.refusal();
            } else if (found == null && m instanceof HttpContent c && c.decoderResult().isFailure()) {
                found = ((RefusalException) c.decoderResult().cause()).refusal;
            }
            ReferenceCountUtil.release(m);
        }
        return found;
    }

    @Test
    void refusalsNameTheirReason() {
        Object[][] cases = {
            {"GET /caf\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n", Refusal.NON_ASCII_TARGET},
            {"GET /a\u0001 HTTP/1.1\r\nHost: x\r\n\r\n", Refusal.CONTROL_IN_TARGET},
            {"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", Refusal.BAD_REQUEST_LINE},
            {"GARBAGE\r\n\r\n", Refusal.BAD_REQUEST_LINE},
            {"GET / http/1.1\r\nHost: x\r\n\r\n", Refusal.BAD_VERSION},
            {"GET / HTTP/1.2\r\nHost: x\r\n\r\n", Refusal.BAD_VERSION},
            {"GET / HTTP/9.9\r\nHost: x\r\n\r\n", Refusal.VERSION_NOT_SUPPORTED},
            {"GET / HTTP/1.1\nHost: x\n\n", Refusal.BARE_LINE_END},
            {"GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", Refusal.BAD_HEADER_LINE},
            {"GET / HTTP/1.1\r\nHost: x\r\nX: a\u0000b\r\n\r\n", Refusal.BAD_HEADER_VALUE},
            {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", Refusal.MISSING_HOST},
            {"GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n", Refusal.DUPLICATE_HOST},
            {"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", Refusal.BAD_HOST},
            {"GET /a#f HTTP/1.1\r\nHost: x\r\n\r\n", Refusal.FRAGMENT_IN_TARGET},
            {"GET health HTTP/1.1\r\nHost: x\r\n\r\n", Refusal.BAD_TARGET_FORM},
            {"get / HTTP/1.1\r\nHost: x\r\n\r\n", Refusal.LOWERCASE_METHOD},
            {"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", Refusal.CONNECT_METHOD},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", Refusal.BAD_CONTENT_LENGTH},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
                Refusal.AMBIGUOUS_FRAMING},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", Refusal.UNSUPPORTED_CODING},
            {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", Refusal.BODY_TOO_LARGE},
            {"POST / HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n", Refusal.EXPECTATION_FAILED},
            {"GET /" + "a".repeat(MAX_LINE) + " HTTP/1.1\r\nHost: x\r\n\r\n", Refusal.REQUEST_LINE_TOO_LONG},
            {"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(MAX_HEADER) + "\r\n\r\n", Refusal.HEADERS_TOO_LARGE},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", Refusal.BAD_CHUNK},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Name: v\r\n\r\n",
                Refusal.BAD_TRAILER},
            {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + "FFFF\r\n", Refusal.BODY_TOO_LARGE},
        };
        for (Object[] c : cases) {
            String text = (String) c[0];
            assertEquals(c[1], refusal(text), text);
            assertEquals(((Refusal) c[1]).status, status(text), text);
        }
        // judged at the request line's CRLF, before the rest of the head arrives: the same reasons
        assertEquals(Refusal.NON_ASCII_TARGET, refusal("GET /caf\u00e9 HTTP/1.1\r\nHost: x"));
        assertEquals(Refusal.BAD_REQUEST_LINE, refusal("GET /a b HTTP/1.1\r\nHost: x"));
        assertEquals(Refusal.BAD_VERSION, refusal("GET / HTTP/x\r\nHost: x"));
    }
}
