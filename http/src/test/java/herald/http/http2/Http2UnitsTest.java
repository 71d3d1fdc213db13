package herald.http.http2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import herald.http.server.Refusal;
import herald.http.server.RequestHead;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The HTTP/2 conversions on their own: response header blocks, request heads, the h2c upgrade checks. */
class Http2UnitsTest {
    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    @Test
    void responseHeadersAreLowerCasedWithoutConnectionFields() {
        byte[] block = ascii("Content-Type: text/plain\r\nX-Multi: a\r\nX-Multi: b\r\nKeep-Alive: timeout=5\r\n"
            + "Upgrade: h2c\r\nProxy-Connection: x\r\nX-Colon: a:b: c\r\nServer: herald\r\nContent-Length: 5\r\n");
        Http2Headers h = ResponseHeaders.of(404, block, block.length);
        assertEquals("404", h.status().toString());
        assertEquals("text/plain", h.get("content-type").toString());
        assertEquals(2, h.getAll("x-multi").size());
        assertEquals("a:b: c", h.get("x-colon").toString());
        assertEquals("5", h.get("content-length").toString());
        assertNull(h.get("keep-alive"));
        assertNull(h.get("upgrade"));
        assertNull(h.get("proxy-connection"));
        h.forEach(e -> assertEquals(e.getKey().toString().toLowerCase(), e.getKey().toString()));
    }

    @Test
    void requestHeadCarriesHttp2VersionAndHostFromAuthority() {
        Http2Headers in = new DefaultHttp2Headers().method("POST").path("/a?b=1").authority("example.org:8443")
            .scheme("https").add("cookie", "a=1").add("cookie", "b=2");
        RequestHead r = Http2Request.of(in, 4096, false);
        assertNull(r.refusal());
        assertFalse(r.full(), "DATA frames follow");
        assertEquals("HTTP/2.0", r.version().text());
        assertEquals(1, r.version().majorVersion(), "HTTP/1.1 semantics for the exchange handler");
        assertEquals(HttpMethod.POST, r.method());
        assertEquals("/a?b=1", r.uri());
        assertEquals("/a", r.path());
        assertEquals("b=1", r.query());
        assertEquals("example.org", r.hostName());
        assertEquals("example.org:8443", r.headers().get("host"));
        assertEquals(2, r.headers().getAll("cookie").size());
        assertFalse(r.headers().names().stream().anyMatch(n -> n.startsWith(":")));
    }

    @Test
    void requestHeadFailuresBecomeStatuses() {
        RequestHead longPath = Http2Request.of(new DefaultHttp2Headers().method("GET").path("/" + "p".repeat(100)), 64,
            true);
        assertEquals(Refusal.REQUEST_LINE_TOO_LONG, longPath.refusal());
        RequestHead noPath = Http2Request.of(new DefaultHttp2Headers().method("GET"), 64, true);
        assertEquals(Refusal.BAD_REQUEST, noPath.refusal());
        RequestHead badMethod = Http2Request.of(new DefaultHttp2Headers().method("G T").path("/"), 64, true);
        assertEquals(Refusal.BAD_REQUEST, badMethod.refusal());
        assertEquals(Http2Request.VERSION, badMethod.version(), "answered on the stream, as HTTP/2");
        RequestHead lower = Http2Request.of(new DefaultHttp2Headers().method("get").path("/"), 64, true);
        assertEquals(Refusal.LOWERCASE_METHOD, lower.refusal());
        RequestHead fragment = Http2Request.of(new DefaultHttp2Headers().method("GET").path("/a#b"), 64, true);
        assertEquals(Refusal.FRAGMENT_IN_TARGET, fragment.refusal());
    }

    private static RequestHead upgrade(String settings, String connection) {
        return upgrade(settings, connection, false);
    }

    private static RequestHead upgrade(String settings, String connection, boolean body) {
        HttpHeaders hs = new DefaultHttpHeaders().set("Host", "x").set("Upgrade", "h2c").set("Connection", connection);
        if (settings != null) {
            hs.set("HTTP2-Settings", settings);
        }
        if (body) {
            hs.set("Content-Length", "3");
        }
        byte[] slash = {'/'};
        return new RequestHead(HttpMethod.GET, HttpVersion.HTTP_1_1, hs, slash, 0, 1, -1, "/", "x", null, false, true,
            !body);
    }

    @Test
    void h2cUpgradeNeedsValidSettingsAndNoBody() {
        // SETTINGS_MAX_CONCURRENT_STREAMS=100, SETTINGS_INITIAL_WINDOW_SIZE=33554432, SETTINGS_ENABLE_PUSH=0 (curl's)
        Http2Settings s = UpgradeWatcher.upgradable(upgrade("AAMAAABkAAQCAAAAAAIAAAAA", "Upgrade, HTTP2-Settings"));
        assertNotNull(s);
        assertEquals(100L, s.maxConcurrentStreams());
        assertEquals(33554432, s.initialWindowSize());
        assertEquals(0, UpgradeWatcher.decodeSettings("").size(), "an empty SETTINGS payload is valid");
        assertNull(UpgradeWatcher.upgradable(upgrade("AAM", "Upgrade, HTTP2-Settings")), "not whole settings");
        assertNull(UpgradeWatcher.upgradable(upgrade("!!!!", "Upgrade, HTTP2-Settings")), "not base64url");
        assertNull(UpgradeWatcher.upgradable(upgrade(null, "Upgrade")), "no HTTP2-Settings");
        assertNull(UpgradeWatcher.upgradable(upgrade("AAMAAABk", "keep-alive")), "Connection lacks Upgrade");
        RequestHead withBody = upgrade("AAMAAABk", "Upgrade, HTTP2-Settings", true);
        assertNull(UpgradeWatcher.upgradable(withBody), "a body: served over HTTP/1.1");
        assertNull(UpgradeWatcher.decodeSettings("AAIAAAAC"), "ENABLE_PUSH=2 is not a valid value");
    }
}
