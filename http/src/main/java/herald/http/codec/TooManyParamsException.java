package herald.http.codec;

/** Thrown by {@link FormDecoder} when a query string or form body holds more pairs than allowed. */
public final class TooManyParamsException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int limit;

  public TooManyParamsException(int limit) {
    super("more than " + limit + " parameters", null, false, false);
    this.limit = limit;
  }

  /** The configured maximum number of parameters. */
  public int limit() {
    return limit;
  }
}
