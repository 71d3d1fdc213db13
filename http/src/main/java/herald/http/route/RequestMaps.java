package herald.http.route;

import clojure.lang.IMapIterable;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import java.util.Iterator;

/**
 * Adds the router's keys to a Ring request map in one step: a request that is a small
 * {@link PersistentArrayMap} (as herald's server builds it) gets one new array map with the keys appended,
 * instead of one copy per {@code assoc} and a conversion to a hash map past eight entries.
 */
public final class RequestMaps {
  private RequestMaps() {}

  /** {@code :path-params}. */
  public static final Keyword PATH_PARAMS = Keyword.intern("path-params");
  /** {@code :herald.http/route}: the matched template. */
  public static final Keyword ROUTE = Keyword.intern("herald.http", "route");
  /** {@code :herald.http/route-name}: the route's name, when it has one. */
  public static final Keyword ROUTE_NAME = Keyword.intern("herald.http", "route-name");

  private static final int MAX_ARRAY_ENTRIES = 24;

  /** {@code req} with :path-params, :herald.http/route and (for named routes) :herald.http/route-name. */
  public static IPersistentMap withMatch(IPersistentMap req, RouteMatch m) {
    Route r = m.route();
    Object name = r.name();
    if (req instanceof PersistentArrayMap am && am.count() + 3 <= MAX_ARRAY_ENTRIES
        && !am.containsKey(PATH_PARAMS) && !am.containsKey(ROUTE) && !am.containsKey(ROUTE_NAME)) {
      int n = am.count();
      Object[] kv = new Object[2 * (n + (name == null ? 2 : 3))];
      Iterator<?> ks = ((IMapIterable) am).keyIterator();
      Iterator<?> vs = ((IMapIterable) am).valIterator();
      int i = 0;
      while (ks.hasNext()) {
        kv[i++] = ks.next();
        kv[i++] = vs.next();
      }
      kv[i++] = PATH_PARAMS;
      kv[i++] = m.params();
      kv[i++] = ROUTE;
      kv[i++] = r.template();
      if (name != null) {
        kv[i++] = ROUTE_NAME;
        kv[i] = name;
      }
      return new PersistentArrayMap(kv);
    }
    IPersistentMap out = req.assoc(PATH_PARAMS, m.params()).assoc(ROUTE, r.template());
    return name == null ? out.without(ROUTE_NAME) : out.assoc(ROUTE_NAME, name);
  }
}
