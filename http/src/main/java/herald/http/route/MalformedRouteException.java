package herald.http.route;

/** A route template that cannot be parsed, e.g. one not starting with '/' or with an empty param name. */
public final class MalformedRouteException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final String template;
  private final String reason;

  public MalformedRouteException(String template, String reason) {
    super("malformed route template \"" + template + "\": " + reason);
    this.template = template;
    this.reason = reason;
  }

  /** The template as given. */
  public String template() {
    return template;
  }

  /** What is wrong with it. */
  public String reason() {
    return reason;
  }
}
