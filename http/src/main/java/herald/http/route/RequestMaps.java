package herald.http.route;

import clojure.lang.IMapIterable;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import java.util.Iterator;

/**
 * Adds keys to a Ring request map in one step (the router's match keys, wrap-params' maps): a request that
 * is a small {@link PersistentArrayMap} (as herald's server builds it) gets one new array map with the keys
 * set, instead of one copy per {@code assoc} and a conversion to a hash map past eight entries.
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

  /**
   * {@code req} with the keys and values of {@code kvs} set (k1 v1 k2 v2 ...; distinct keys). A
   * {@link PersistentArrayMap} request of at most 24 entries stays one array map, built in one copy;
   * anything else goes through {@code assoc}.
   */
  public static IPersistentMap with(IPersistentMap req, Object... kvs) {
    if (req instanceof PersistentArrayMap am && am.count() + kvs.length / 2 <= MAX_ARRAY_ENTRIES) {
      Object[] kv = new Object[2 * am.count() + kvs.length];
      Iterator<?> ks = ((IMapIterable) am).keyIterator();
      Iterator<?> vs = ((IMapIterable) am).valIterator();
      int i = 0;
      while (ks.hasNext()) {
        Object k = ks.next();
        Object v = vs.next();
        if (!setBy(kvs, k)) {
          kv[i++] = k;
          kv[i++] = v;
        }
      }
      System.arraycopy(kvs, 0, kv, i, kvs.length);
      i += kvs.length;
      return new PersistentArrayMap(i == kv.length ? kv : java.util.Arrays.copyOf(kv, i));
    }
    IPersistentMap out = req;
    for (int i = 0; i < kvs.length; i += 2) out = out.assoc(kvs[i], kvs[i + 1]);
    return out;
  }

  private static boolean setBy(Object[] kvs, Object k) {
    for (int i = 0; i < kvs.length; i += 2) if (kvs[i] == k || kvs[i].equals(k)) return true;
    return false;
  }

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
