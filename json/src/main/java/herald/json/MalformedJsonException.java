package herald.json;

/**
 * JSON text that cannot be read: a syntax error, trailing content, empty input, invalid UTF-8, or a
 * violated limit (nesting depth, string, number or document length, a decimal beyond a double's range).
 * Carries the 1-based line and column where the problem was found (-1 when unknown) and a detail message
 * without location.
 */
public final class MalformedJsonException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int line;
  private final int column;
  private final String detail;

  public MalformedJsonException(String detail, int line, int column, Throwable cause) {
    super("malformed JSON: " + detail + (line > 0 ? " (line " + line + ", column " + column + ")" : ""), cause);
    this.detail = detail;
    this.line = line;
    this.column = column;
  }

  /** The 1-based line of the error, or -1. */
  public int line() {
    return line;
  }

  /** The 1-based column of the error, or -1. */
  public int column() {
    return column;
  }

  /** What is wrong, without the location. */
  public String detail() {
    return detail;
  }
}
