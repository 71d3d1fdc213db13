package herald.http.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import org.junit.jupiter.api.Test;

class RequestMapsTest {
  private final Router router = Router.builder().add("/a/:id", "named", 1).add("/b/:id", null, 2).build();

  private static IPersistentMap request(int entries) {
    Object[] kv = new Object[2 * entries];
    for (int i = 0; i < entries; i++) {
      kv[2 * i] = Keyword.intern("k" + i);
      kv[2 * i + 1] = i;
    }
    return new PersistentArrayMap(kv);
  }

  @Test
  void appendsToArrayMapsAndKeepsEveryKey() {
    for (int entries : new int[] {0, 8, 10, 21, 30}) {
      IPersistentMap req = request(entries);
      IPersistentMap out = RequestMaps.withMatch(req, router.match("/a/7"));
      assertEquals(entries + 3, out.count());
      for (int i = 0; i < entries; i++) assertEquals(i, out.valAt(Keyword.intern("k" + i)));
      assertEquals("7", ((IPersistentMap) out.valAt(RequestMaps.PATH_PARAMS)).valAt(Keyword.intern("id")));
      assertEquals("/a/:id", out.valAt(RequestMaps.ROUTE));
      assertEquals("named", out.valAt(RequestMaps.ROUTE_NAME));
      IPersistentMap unnamed = RequestMaps.withMatch(req, router.match("/b/8"));
      assertEquals(entries + 2, unnamed.count());
      assertFalse(unnamed.containsKey(RequestMaps.ROUTE_NAME));
    }
  }

  @Test
  void replacesKeysAnOuterRouterSet() {
    IPersistentMap outer = RequestMaps.withMatch(request(3), router.match("/a/1"));
    IPersistentMap inner = RequestMaps.withMatch(outer, router.match("/b/2"));
    assertEquals(5, inner.count());
    assertEquals("/b/:id", inner.valAt(RequestMaps.ROUTE));
    assertFalse(inner.containsKey(RequestMaps.ROUTE_NAME), "the inner route has no name");
    IPersistentMap hashed = RequestMaps.withMatch(PersistentHashMap.create(Keyword.intern("x"), 1), router.match("/a/3"));
    assertTrue(hashed.containsKey(RequestMaps.ROUTE_NAME));
    assertEquals(4, hashed.count());
  }

  @Test
  void withSetsAndReplacesKeysInOneArrayMap() {
    Keyword a = Keyword.intern("k1");
    Keyword fresh = Keyword.intern("fresh");
    IPersistentMap req = request(10);
    IPersistentMap out = RequestMaps.with(req, a, "replaced", fresh, "new");
    assertTrue(out instanceof PersistentArrayMap, "stays an array map past eight entries");
    assertEquals(11, out.count());
    assertEquals("replaced", out.valAt(a));
    assertEquals("new", out.valAt(fresh));
    assertEquals(9, out.valAt(Keyword.intern("k9")));
    IPersistentMap big = RequestMaps.with(request(30), fresh, 1);
    assertEquals(31, big.count());
    assertEquals(1, big.valAt(fresh));
  }
}
