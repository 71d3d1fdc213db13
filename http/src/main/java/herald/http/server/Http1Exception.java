package herald.http.server;

import io.netty.handler.codec.DecoderException;

/** A request {@link Http1Decoder} refuses, with the status to answer (400, 413, 414, 431, 501, 505, ...). */
final class Http1Exception extends DecoderException {
    private static final long serialVersionUID = 1L;

    final int status;

    Http1Exception(int status, String message) {
        super(message);
        this.status = status;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this; // a client's mistake: the stack says nothing
    }
}
