package herald.http.exception;

/** The transport asked for ({@code :epoll} or {@code :kqueue}) cannot run here: no native library, wrong OS. */
public final class TransportUnavailableException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public TransportUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
