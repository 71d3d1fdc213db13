package herald.http.route;

import herald.http.codec.PercentDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A segment-trie matcher over route templates. Built once with {@link Builder}, then immutable and safe to
 * share between threads.
 *
 * <p>{@link #match(String)} takes the raw request path (Ring's {@code :uri}, still percent-encoded): it is
 * split on {@code /}, each segment compared (decoded only when it holds a {@code %}) with static children
 * first, then the parameter child, then a wildcard, backtracking when a deeper level fails. Fully static
 * paths are a single hash lookup. Allocation on a match: none for static routes; the params map (and its
 * decoded values) for others.
 */
public final class Router {
  private final Node root;
  private final Map<String, Route> exact;
  private final List<Route> routes;

  private Router(Node root, Map<String, Route> exact, List<Route> routes) {
    this.root = root;
    this.exact = exact;
    this.routes = routes;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** All routes in declaration order. */
  public List<Route> routes() {
    return routes;
  }

  /** Matches the raw path {@code path}; null when no route matches. */
  public RouteMatch match(String path) {
    if (path == null || path.isEmpty() || path.charAt(0) != '/') return null;
    Route r = exact.get(path);
    if (r != null) return r.emptyMatch;
    RouteMatch m = descend(root, path, 1, 0);
    return m == null ? null : m.seal();
  }

  private static RouteMatch descend(Node n, String path, int pos, int depth) {
    int slash = path.indexOf('/', pos);
    boolean last = slash < 0;
    int end = last ? path.length() : slash;
    if (n.hasStatic()) {
      Node child = PercentDecoder.needsDecoding(path, pos, end, false)
          ? n.staticChild(PercentDecoder.decode(path, pos, end, StandardCharsets.UTF_8, false))
          : n.find(path, pos, end);
      if (child != null) {
        RouteMatch m = last ? terminal(child.route) : descend(child, path, end + 1, depth);
        if (m != null) return m;
      }
    }
    if (n.param != null && end > pos) {
      RouteMatch m = last ? terminal(n.param.route) : descend(n.param, path, end + 1, depth + 1);
      if (m != null) return capture(m, depth, path, pos, end);
    }
    if (n.wildcard != null) return capture(terminal(n.wildcard), depth, path, pos, path.length());
    return null;
  }

  private static RouteMatch terminal(Route r) {
    if (r == null) return null;
    return r.emptyMatch != null ? r.emptyMatch : new RouteMatch(r, r.paramNames.length);
  }

  private static RouteMatch capture(RouteMatch m, int i, String path, int start, int end) {
    m.kv[2 * i] = m.route().paramNames[i];
    m.kv[2 * i + 1] = PercentDecoder.decode(path, start, end, StandardCharsets.UTF_8, false);
    return m;
  }

  /** Collects routes, rejecting malformed templates and conflicts as they are added. */
  public static final class Builder {
    private final Node root = new Node();
    private final Map<String, Route> exact = new HashMap<>();
    private final List<Route> routes = new ArrayList<>();

    /**
     * Adds a route.
     *
     * @throws MalformedRouteException when the template cannot be parsed
     * @throws RouteConflictException when an earlier route matches exactly the same paths
     */
    public Builder add(String template, Object name, Object payload) {
      RouteTemplate t = RouteTemplate.parse(template);
      Route r = new Route(t, name, payload);
      Node n = root;
      List<RouteTemplate.Segment> segs = t.segments();
      for (int i = 0; i < segs.size(); i++) {
        RouteTemplate.Segment s = segs.get(i);
        switch (s.kind()) {
          case STATIC -> n = n.addStatic(s.text());
          case PARAM -> n = n.param != null ? n.param : (n.param = new Node());
          case WILDCARD -> {
            if (n.wildcard != null) throw new RouteConflictException(n.wildcard, r);
            n.wildcard = r;
            return added(r, t);
          }
        }
      }
      if (n.route != null) throw new RouteConflictException(n.route, r);
      n.route = r;
      return added(r, t);
    }

    private Builder added(Route r, RouteTemplate t) {
      routes.add(r);
      if (t.isStatic() && t.template().indexOf('%') < 0) exact.put(staticPath(t), r);
      return this;
    }

    private static String staticPath(RouteTemplate t) {
      StringBuilder sb = new StringBuilder();
      for (RouteTemplate.Segment s : t.segments()) sb.append('/').append(s.text());
      return sb.toString();
    }

    public Router build() {
      return new Router(root, Map.copyOf(exact), Collections.unmodifiableList(new ArrayList<>(routes)));
    }
  }
}
