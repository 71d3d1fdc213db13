package herald.http.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import herald.http.exception.InvalidResponseException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Header maps: which scans are remembered by identity, and that every scan renders and validates exactly. */
class HeaderScanTest {
    private static IPersistentMap map(Object... kvs) {
        return PersistentArrayMap.createAsIfByAssoc(kvs);
    }

    private static String text(HeaderScan s) {
        return new String(s.bytes, 0, s.size, StandardCharsets.ISO_8859_1);
    }

    @Test
    void anImmutableMapIsRememberedByIdentityOnly() {
        LoopState loop = LoopState.get();
        IPersistentMap m = map("Content-Type", "text/plain; charset=ISO-8859-1", Keyword.intern("x-k"),
            PersistentVector.create("a", "b"));
        HeaderScan first = HeaderScan.of(m, loop);
        assertSame(first, HeaderScan.of(m, loop), "the same map: the remembered scan");
        assertEquals("Content-Type: text/plain; charset=ISO-8859-1\r\nx-k: a\r\nx-k: b\r\n", text(first));
        assertSame(StandardCharsets.ISO_8859_1, first.charset);
        IPersistentMap equal = map("Content-Type", "text/plain; charset=ISO-8859-1", Keyword.intern("x-k"),
            PersistentVector.create("a", "b"));
        HeaderScan other = HeaderScan.of(equal, loop);
        assertNotSame(first, other, "an equal map that is another object is scanned again");
        assertEquals(text(first), text(other));
    }

    @Test
    void aMapThatMayRenderDifferentlyIsScannedEveryTime() {
        LoopState loop = LoopState.get();
        List<String> values = new ArrayList<>(List.of("one"));
        IPersistentMap withList = map("X-L", values);
        HeaderScan a = HeaderScan.of(withList, loop);
        assertEquals("X-L: one\r\n", text(a));
        values.add("two");
        HeaderScan b = HeaderScan.of(withList, loop);
        assertNotSame(a, b);
        assertEquals("X-L: one\r\nX-L: two\r\n", text(b));
        StringBuilder sb = new StringBuilder("v1");
        IPersistentMap withObject = map("X-O", sb);
        assertEquals("X-O: v1\r\n", text(HeaderScan.of(withObject, loop)));
        sb.setCharAt(1, '2');
        assertEquals("X-O: v2\r\n", text(HeaderScan.of(withObject, loop)));
        Map<String, String> javaMap = new HashMap<>(Map.of("X-J", "1"));
        assertEquals("X-J: 1\r\n", text(HeaderScan.of(javaMap, loop)));
        javaMap.put("X-J", "2");
        assertEquals("X-J: 2\r\n", text(HeaderScan.of(javaMap, loop)));
    }

    @Test
    void crOrLfIsRefusedInNamesAndValuesEveryTime() {
        LoopState loop = LoopState.get();
        for (IPersistentMap bad : List.of(map("X-A", "a\r\nX-Injected: 1"), map("X-A", "a\nb"), map("X-A", "a\rb"),
            map("X-A\r\nX-B", "1"), map("X-A", PersistentVector.create("ok", "a\nb")))) {
            for (int i = 0; i < 2; i++) {
                assertThrows(InvalidResponseException.class, () -> HeaderScan.of(bad, loop), bad.toString());
            }
        }
        assertThrows(InvalidResponseException.class, () -> HeaderScan.of(map("X-A", PersistentVector.create(
            "ok", null)), loop), "a nil value in a list");
    }

    @Test
    void theServerHandledHeadersAreNotedNotWritten() {
        HeaderScan s = HeaderScan.of(map("Date", "x", "server", "y", "Connection", "Close", "Content-Length", " 5 ",
            "Transfer-Encoding", "chunked", "X-A", "1"), LoopState.get());
        assertTrue(s.date && s.server && s.close);
        assertEquals("5", s.contentLength);
        assertEquals("Date: x\r\nserver: y\r\nX-A: 1\r\n", text(s));
        assertSame(HeaderScan.NONE, HeaderScan.of(null, LoopState.get()));
        assertSame(StandardCharsets.UTF_8, HeaderScan.NONE.charset);
    }
}
