package herald.http.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import clojure.lang.Keyword;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RouterTest {
  private static Router router(String... templates) {
    Router.Builder b = Router.builder();
    for (String t : templates) b.add(t, null, t);
    return b.build();
  }

  private static String matched(Router r, String path) {
    RouteMatch m = r.match(path);
    return m == null ? null : m.route().template();
  }

  private static Object param(Router r, String path, String name) {
    return r.match(path).params().valAt(Keyword.intern(name));
  }

  @Test
  void staticBeforeParamBeforeWildcardWhateverTheOrder() {
    Router r = router("/a/*rest", "/a/:id", "/a/new");
    assertEquals("/a/new", matched(r, "/a/new"));
    assertEquals("/a/:id", matched(r, "/a/7"));
    assertEquals("/a/*rest", matched(r, "/a/7/x"));
    assertEquals("/a/*rest", matched(r, "/a/"));
  }

  @Test
  void backtracksWhenTheStaticBranchFailsDeeper() {
    Router r = router("/a/b/d", "/a/:x/c", "/:y/b/c/*z");
    assertEquals("/a/:x/c", matched(r, "/a/b/c"));
    assertEquals("b", param(r, "/a/b/c", "x"));
    assertEquals("/:y/b/c/*z", matched(r, "/a/b/c/q"));
    assertEquals("q", param(r, "/a/b/c/q", "z"));
  }

  @Test
  void paramsArePercentDecodedAsUtf8WithPlusKept() {
    Router r = router("/p/:id/f/:g");
    RouteMatch m = r.match("/p/caf%C3%A9/f/a+b%2Fc");
    assertEquals("café", m.params().valAt(Keyword.intern("id")));
    assertEquals("a+b/c", m.params().valAt(Keyword.intern("g")));
    assertEquals(2, m.params().count());
    assertEquals("%zz", param(router("/p/:id"), "/p/%zz", "id"));
  }

  @Test
  void encodedStaticSegmentsMatchTheirDecodedForm() {
    Router r = router("/caf%C3%A9", "/x/ü/y");
    assertEquals("/caf%C3%A9", matched(r, "/café"));
    assertEquals("/caf%C3%A9", matched(r, "/caf%c3%a9"));
    assertEquals("/x/ü/y", matched(r, "/x/%C3%BC/y"));
  }

  @Test
  void emptySegmentsAndTrailingSlashesAreSignificant() {
    Router r = router("/", "/a", "/a/", "/b/:id");
    assertEquals("/", matched(r, "/"));
    assertEquals("/a", matched(r, "/a"));
    assertEquals("/a/", matched(r, "/a/"));
    assertNull(matched(r, "/b/"));
    assertNull(matched(r, "/b//"));
    assertNull(matched(r, "/a//"));
    assertNull(matched(r, ""));
    assertNull(matched(r, "a"));
    assertNull(matched(r, null));
  }

  @Test
  void staticMatchesShareOneMatchObject() {
    Router r = router("/a/b", "/c/:d");
    assertSame(r.match("/a/b"), r.match("/a/b"));
    assertEquals(0, r.match("/a/b").params().count());
  }

  @Test
  void conflictsNameBothRoutes() {
    Router.Builder b = Router.builder().add("/a/:x", "first", 1);
    RouteConflictException e = assertThrows(RouteConflictException.class, () -> b.add("/a/:y", "second", 2));
    assertEquals("/a/:x", e.first().template());
    assertEquals("/a/:y", e.second().template());
    assertTrue(e.getMessage().contains("first") && e.getMessage().contains("second"));
    assertThrows(RouteConflictException.class, () -> Router.builder().add("/f/*a", null, 1).add("/f/*b", null, 2));
    assertThrows(RouteConflictException.class, () -> Router.builder().add("/s", null, 1).add("/s", null, 2));
    assertThrows(RouteConflictException.class, () -> Router.builder().add("/é", null, 1).add("/%C3%A9", null, 2));
    // overlapping but not identical: priority decides, no conflict
    Router.builder().add("/a/:x", null, 1).add("/a/b", null, 2).add("/a/*c", null, 3).add("/:q/b", null, 4).build();
  }

  @Test
  void malformedTemplatesAreRejectedWithTheReason() {
    for (String t : new String[] {"", "a", "/a//b", "/:", "/*", "/:1x", "/:x.json", "/*a/b", "/:a/:a", "/a?b", "/:a/*a"}) {
      MalformedRouteException e = assertThrows(MalformedRouteException.class, () -> RouteTemplate.parse(t), t);
      assertEquals(t, e.template());
    }
    assertEquals(3, RouteTemplate.parse("/v1/things:batch/*rest").segments().size());
  }

  @Test
  void endpointFallsBackToGetForHeadAndListsAllow() {
    Keyword get = Keyword.intern("get");
    Keyword post = Keyword.intern("post");
    Keyword purge = Keyword.intern("purge");
    Endpoint ep = new Endpoint(Map.of(get, "g", post, "p", purge, "x"));
    assertEquals("g", ep.handler(Keyword.intern("head")));
    assertEquals("x", ep.handler(purge));
    assertNull(ep.handler(Keyword.intern("delete")));
    assertTrue(ep.allow().startsWith("GET, HEAD, POST"));
    assertTrue(ep.allow().contains("PURGE") && ep.allow().endsWith("OPTIONS"));
    Endpoint any = new Endpoint(Map.of(get, "g", Keyword.intern("any"), "a"));
    assertEquals("a", any.handler(Keyword.intern("delete")));
    assertEquals("g", any.handler(get));
    assertNull(any.allow());
  }

  @Test
  void manyStaticSiblings() {
    Router.Builder b = Router.builder();
    for (int i = 0; i < 200; i++) b.add("/s" + i + "/:id", null, i);
    Router r = b.build();
    for (int i = 0; i < 200; i++) assertEquals("/s" + i + "/:id", matched(r, "/s" + i + "/x"));
    assertNull(matched(r, "/s200/x"));
  }
}
