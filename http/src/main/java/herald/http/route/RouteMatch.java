package herald.http.route;

import clojure.lang.IPersistentMap;
import clojure.lang.PersistentArrayMap;

/** The result of matching a path: the route and its path parameters (keyword to decoded String). */
public final class RouteMatch {
  private final Route route;
  final Object[] kv;
  private IPersistentMap params;

  RouteMatch(Route route, IPersistentMap params) {
    this.route = route;
    this.kv = null;
    this.params = params;
  }

  RouteMatch(Route route, int paramCount) {
    this.route = route;
    this.kv = new Object[2 * paramCount];
  }

  RouteMatch seal() {
    if (params == null) params = new PersistentArrayMap(kv);
    return this;
  }

  public Route route() {
    return route;
  }

  /** Path parameters as a Clojure map of keyword to percent-decoded String (empty for static routes). */
  public IPersistentMap params() {
    return params;
  }

  @Override
  public String toString() {
    return "RouteMatch[" + route.template() + " " + params + "]";
  }
}
