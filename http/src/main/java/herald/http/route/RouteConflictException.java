package herald.http.route;

/** Two routes that match exactly the same set of paths (e.g. {@code /a/:x} and {@code /a/:y}). */
public final class RouteConflictException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final transient Route first;
  private final transient Route second;

  public RouteConflictException(Route first, Route second) {
    super("route " + describe(second) + " conflicts with route " + describe(first)
        + ": both match the same paths");
    this.first = first;
    this.second = second;
  }

  private static String describe(Route r) {
    return "\"" + r.template() + "\"" + (r.name() == null ? "" : " (" + r.name() + ")");
  }

  /** The route declared first. */
  public Route first() {
    return first;
  }

  /** The route declared second, which conflicts with {@link #first()}. */
  public Route second() {
    return second;
  }
}
