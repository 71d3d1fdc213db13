package herald.http.server;

import clojure.lang.IFn;
import java.util.Objects;

/**
 * The Clojure functions the Java core calls: the Ring handler, the error logger, the writer for body types
 * the core does not know (the StreamableResponseBody protocol), the WebSocket listener adapter and the
 * application's answers to requests the server refuses itself.
 */
public final class Hooks {
    /** The Ring handler: 1-arity, or 3-arity when the config says async. */
    public final IFn handler;
    /** {@code (fn [throwable request])}; request may be nil. */
    public final IFn errorLogger;
    /** {@code (fn [body response output-stream])}: writes and closes the stream. */
    public final IFn bodyWriter;
    /** {@code (fn [listener])} returning a {@link herald.http.websocket.WebSocketListener}. */
    public final IFn websocketAdapter;
    /**
     * {@code (fn [status info])} returning the Ring response for an answer the server makes itself ({@link Refusal});
     * null for the built-in plain-text answers.
     */
    public final IFn errorResponse;
    /** The access log, or null (off). */
    public final AccessLog accessLog;

    public Hooks(IFn handler, IFn errorLogger, IFn bodyWriter, IFn websocketAdapter) {
        this(handler, errorLogger, bodyWriter, websocketAdapter, null);
    }

    public Hooks(IFn handler, IFn errorLogger, IFn bodyWriter, IFn websocketAdapter, IFn errorResponse) {
        this(handler, errorLogger, bodyWriter, websocketAdapter, errorResponse, null);
    }

    public Hooks(IFn handler, IFn errorLogger, IFn bodyWriter, IFn websocketAdapter, IFn errorResponse,
                 AccessLog accessLog) {
        this.handler = Objects.requireNonNull(handler, "handler");
        this.errorLogger = Objects.requireNonNull(errorLogger, "errorLogger");
        this.bodyWriter = bodyWriter;
        this.websocketAdapter = websocketAdapter;
        this.errorResponse = errorResponse;
        this.accessLog = accessLog;
    }
}
