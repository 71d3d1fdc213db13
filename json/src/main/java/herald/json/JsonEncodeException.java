package herald.json;

/** A value that cannot be written as JSON (an unsupported class, a non-finite double, a bad map key). */
public final class JsonEncodeException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient Object value;

  public JsonEncodeException(String message, Object value, Throwable cause) {
    super(message, cause);
    this.value = value;
  }

  /** The offending value (a class name is in the message). */
  public Object value() {
    return value;
  }
}
