package herald.load.client;

/** A request that got no response, with the {@link ErrorKind} that says why. */
public final class RequestFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient ErrorKind kind;

  public RequestFailure(ErrorKind kind, Throwable cause) {
    super(kind.label() + (cause == null ? "" : ": " + cause), cause, false, false);
    this.kind = kind;
  }

  /** Why the request failed. */
  public ErrorKind kind() {
    return kind;
  }
}
