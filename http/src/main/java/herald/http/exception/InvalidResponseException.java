package herald.http.exception;

/** A handler returned something that is not a valid Ring response (bad status, header or body type). */
public final class InvalidResponseException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public InvalidResponseException(String message) {
        super(message);
    }
}
