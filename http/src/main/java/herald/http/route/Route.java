package herald.http.route;

import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import java.util.List;

/** One compiled route: its template, optional name, user payload and parameter keywords. */
public final class Route {
  private final RouteTemplate template;
  private final Object name;
  private final Object payload;
  final Keyword[] paramNames;
  final RouteMatch emptyMatch;

  Route(RouteTemplate template, Object name, Object payload) {
    this.template = template;
    this.name = name;
    this.payload = payload;
    List<String> names = template.paramNames();
    this.paramNames = new Keyword[names.size()];
    for (int i = 0; i < paramNames.length; i++) paramNames[i] = Keyword.intern(names.get(i));
    this.emptyMatch = paramNames.length == 0 ? new RouteMatch(this, PersistentArrayMap.EMPTY) : null;
  }

  /** The template string as declared, e.g. {@code "/participant/:id"}. */
  public String template() {
    return template.template();
  }

  /** The parsed template. */
  public RouteTemplate parsed() {
    return template;
  }

  /** The route's {@code :name}, or null. */
  public Object name() {
    return name;
  }

  /** What the route was registered with (herald's Clojure router stores an {@link Endpoint}). */
  public Object payload() {
    return payload;
  }

  @Override
  public String toString() {
    return "Route[" + template() + (name == null ? "" : " " + name) + "]";
  }
}
