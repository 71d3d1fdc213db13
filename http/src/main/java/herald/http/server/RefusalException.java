package herald.http.server;

import io.netty.handler.codec.DecoderException;

/**
 * A request (or its body) refused by a codec before its handler, with the {@link Refusal} to answer (400, 413, 414,
 * 431, 501, 505, ...): the failure of a body content's {@code DecoderResult}.
 */
public final class RefusalException extends DecoderException {
    private static final long serialVersionUID = 1L;

    final int status;
    /** Why, for the answer and the {@code :error-response} function. */
    public final Refusal refusal;

    public RefusalException(Refusal refusal) {
        super(refusal.message);
        this.status = refusal.status;
        this.refusal = refusal;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this; // a client's mistake: the stack says nothing
    }
}
