package herald.http.server;

import io.netty.handler.codec.DecoderException;

/** A request refused before its handler, with the {@link Refusal} to answer (400, 413, 414, 431, 501, 505, ...). */
final class Http1Exception extends DecoderException {
    private static final long serialVersionUID = 1L;

    final int status;
    /** Why, for the answer and the {@code :error-response} function. */
    final Refusal refusal;

    Http1Exception(Refusal refusal) {
        super(refusal.message);
        this.status = refusal.status;
        this.refusal = refusal;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this; // a client's mistake: the stack says nothing
    }
}
