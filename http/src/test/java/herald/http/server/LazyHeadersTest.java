package herald.http.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import clojure.lang.IPersistentMap;
import clojure.lang.PersistentArrayMap;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import org.junit.jupiter.api.Test;

/** The lazily built Ring :headers map. */
class LazyHeadersTest {
    @Test
    void realizesToLowercasedJoinedMap() {
        HttpHeaders hs = new DefaultHttpHeaders().add("Accept", "a").add("ACCEPT", "b").add("Cookie", "x=1")
            .add("cookie", "y=2");
        LazyHeaders lazy = new LazyHeaders(hs);
        IPersistentMap expected = PersistentArrayMap.createAsIfByAssoc(new Object[] {"accept", "a,b", "cookie", "x=1; y=2"});
        assertEquals(expected, lazy);
        assertEquals(expected.hashCode(), lazy.hashCode());
        assertEquals("a,b", lazy.valAt("accept"));
        assertEquals(3, lazy.assoc("new", "v").count());
        assertSame(lazy.realize(), lazy.realize(), "realized once");
    }

    @Test
    void manyHeadersUseAHashMap() {
        HttpHeaders hs = new DefaultHttpHeaders();
        for (int i = 0; i < 40; i++) {
            hs.add("X-H" + i, "v" + i);
        }
        hs.add("x-h3", "again");
        IPersistentMap m = new LazyHeaders(hs).realize();
        assertEquals(40, m.count());
        assertEquals("v3,again", m.valAt("x-h3"));
    }
}
