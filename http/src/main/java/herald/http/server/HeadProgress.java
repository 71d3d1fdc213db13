package herald.http.server;

/**
 * What a connection needs of the HTTP/1.1 decoder in front of it ({@code herald.http.http1.Http1Decoder}): when the
 * head being received began arriving, for {@code :request-timeout-ms} and {@code :header-timeout-ms}.
 */
public interface HeadProgress {
    /** {@code System.nanoTime()} when an unfinished request head began arriving; 0 when none is pending. */
    long partialSince();

    /** The request being received is done with (received whole, refused or abandoned): no head is pending now. */
    void requestDone();
}
