package herald.http.http2;

import herald.http.server.Refusal;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionDecoder;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2FrameLogger;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.logging.LogLevel;

/**
 * Netty's server frame codec with the two connection errors of RFC 9113 5.1 and 5.1.1 it reports as stream errors:
 * a frame on a stream the client ended and the server closed (not reset) is a connection error STREAM_CLOSED, and
 * a HEADERS frame opening a stream whose id is below one the client opened already (a skipped id) is a connection
 * error PROTOCOL_ERROR. Netty answers both with RST_STREAM STREAM_CLOSED, since after the stream is gone it cannot
 * tell them from a frame the client sent before it saw a reset; this codec remembers the ids the client skipped and
 * the streams the server reset (the last {@value #RESETS_KEPT} of each; a frame for an older one gets Netty's
 * stream error). A HEADERS frame on a half-closed (remote) stream is a stream error STREAM_CLOSED
 * ({@link HeadersCheck}). Costs one listener call per stream opened and per stream closed, and a state look-up per
 * HEADERS frame.
 */
final class GuardedCodec extends Http2FrameCodec {
    static final int RESETS_KEPT = 32;
    private static final int GAPS_KEPT = 16;
    private final int[] resets = new int[RESETS_KEPT];
    private int resetNext;
    /** Pairs of [first, last] stream ids the client skipped. */
    private final int[] gaps = new int[GAPS_KEPT * 2];
    private int gapNext;
    private int lastRemote = -1;
    private boolean failed;
    /** Writes the server's own answers; null in unit tests without a server. */
    private Http2Host host;
    private HeadersTracker frames;

    private GuardedCodec(Http2ConnectionEncoder encoder, Http2ConnectionDecoder decoder, Http2Settings settings,
                         boolean decoupleCloseAndGoAway, boolean flushPreface) {
        super(encoder, decoder, settings, decoupleCloseAndGoAway, flushPreface);
        connection().addListener(new Http2ConnectionAdapter() {
            @Override
            public void onStreamAdded(Http2Stream stream) {
                int id = stream.id();
                if ((id & 1) == 1 && id > lastRemote) {
                    if (id > lastRemote + 2) {
                        gaps[gapNext] = lastRemote + 2;
                        gaps[gapNext + 1] = id - 2;
                        gapNext = (gapNext + 2) % gaps.length;
                    }
                    lastRemote = id;
                }
            }

            @Override
            public void onStreamClosed(Http2Stream stream) {
                if (stream.isResetSent()) {
                    reset(stream.id());
                }
            }
        });
    }

    /** A server codec builder whose {@code build()} makes a {@link GuardedCodec}. */
    static Http2FrameCodecBuilder builder() {
        return new Builder();
    }

    private void reset(int id) {
        resets[resetNext] = id;
        resetNext = (resetNext + 1) % RESETS_KEPT;
    }

    private boolean wasReset(int id) {
        for (int r : resets) {
            if (r == id) {
                return true;
            }
        }
        return false;
    }

    private boolean skipped(int id) {
        for (int i = 0; i < gaps.length; i += 2) {
            if (gaps[i] != 0 && id >= gaps[i] && id <= gaps[i + 1]) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void onError(ChannelHandlerContext ctx, boolean outbound, Throwable cause) {
        if (Http2CodecUtil.getEmbeddedHttp2Exception(cause) instanceof Http2Exception.StreamException e) {
            int id = e.streamId();
            if (!outbound && e.error() == Http2Error.STREAM_CLOSED && connection().stream(id) == null
                && connection().remote().mayHaveCreatedStream(id) && !wasReset(id)) {
                super.onError(ctx, false, skipped(id)
                    ? Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR, "stream %d opened after a higher one", id)
                    : Http2Exception.connectionError(Http2Error.STREAM_CLOSED, "frame on stream %d after it ended", id));
                return;
            }
            if (connection().stream(id) == null) {
                reset(id); // answered with RST_STREAM below: frames the client sent before seeing it are not its fault
            }
        }
        super.onError(ctx, outbound, cause);
    }

    /** Where the 431 answers go ({@link #handleServerHeaderDecodeSizeError}) and who saw which stream's headers. */
    void answers(Http2Host host, HeadersTracker frames) {
        this.host = host;
        this.frames = frames;
    }

    /**
     * A header list over {@code :max-header-bytes} (up to the 1.25 times Netty decodes): herald's 431 (through
     * {@code :error-response}) instead of Netty's bare {@code :status 431}; Netty resets the stream after it.
     */
    @Override
    protected void handleServerHeaderDecodeSizeError(ChannelHandlerContext ctx, Http2Stream stream) {
        if (host == null) {
            super.handleServerHeaderDecodeSizeError(ctx, stream);
            return;
        }
        host.writeRefusal(ctx, encoder(), stream.id(), Refusal.HEADERS_TOO_LARGE);
    }

    /**
     * A header block beyond what Netty decodes ends the connection (its HPACK state cannot be kept): the request it
     * opened is answered 431 first, so the client gets a status, then GOAWAY names that stream as the last one.
     */
    @Override
    protected void onConnectionError(ChannelHandlerContext ctx, boolean outbound, Throwable cause,
                                     Http2Exception http2Ex) {
        failed = true;
        if (!outbound && host != null && http2Ex != null && http2Ex.error() == Http2Error.PROTOCOL_ERROR
            && String.valueOf(http2Ex.getMessage()).startsWith("Header size exceeded")) {
            int id = frames.headersStream;
            if ((id & 1) == 1 && id > lastRemote && connection().stream(id) == null) {
                try {
                    connection().remote().createStream(id, true);
                    host.writeRefusal(ctx, encoder(), id, Refusal.HEADERS_TOO_LARGE);
                } catch (Http2Exception | RuntimeException notOpened) {
                    // no stream to answer on (refused by the stream limits): GOAWAY alone, as before
                }
            }
        }
        super.onConnectionError(ctx, outbound, cause, http2Ex);
    }

    /** A connection error was sent (GOAWAY with its code): the close that follows should not reset the TCP connection. */
    boolean failed() {
        return failed;
    }

    private static final class Builder extends Http2FrameCodecBuilder {
        private final HeadersCheck check = new HeadersCheck();

        Builder() {
            server(true);
            frameLogger(check);
        }

        @Override
        protected Http2FrameCodec build(Http2ConnectionDecoder decoder, Http2ConnectionEncoder encoder,
                                        Http2Settings settings) {
            GuardedCodec codec = new GuardedCodec(encoder, decoder, settings, decoupleCloseAndGoAway(), flushPreface());
            codec.gracefulShutdownTimeoutMillis(gracefulShutdownTimeoutMillis());
            check.connection = codec.connection();
            return codec;
        }
    }

    /**
     * A HEADERS frame on a stream the client has ended is a stream error STREAM_CLOSED (RFC 9113 5.1); Netty checks
     * the header count first and answers PROTOCOL_ERROR. The frame logger slot is the one hook Netty calls with each
     * inbound frame before its own checks: this one logs nothing and throws that stream error instead (the reader
     * skips the frame and the connection goes on).
     */
    static final class HeadersCheck extends Http2FrameLogger {
        Http2Connection connection;

        HeadersCheck() {
            super(LogLevel.TRACE, GuardedCodec.class);
        }

        @Override
        public boolean isEnabled() {
            return false;
        }

        @Override
        public void logHeaders(Direction direction, ChannelHandlerContext ctx, int streamId, Http2Headers headers,
                               int padding, boolean endStream) {
            check(direction, streamId);
        }

        @Override
        public void logHeaders(Direction direction, ChannelHandlerContext ctx, int streamId, Http2Headers headers,
                               int streamDependency, short weight, boolean exclusive, int padding, boolean endStream) {
            check(direction, streamId);
        }

        private void check(Direction direction, int streamId) {
            Http2Stream s = direction == Direction.INBOUND && connection != null ? connection.stream(streamId) : null;
            if (s != null && (s.state() == Http2Stream.State.HALF_CLOSED_REMOTE || s.state() == Http2Stream.State.CLOSED)) {
                GuardedCodec.<RuntimeException>raise(Http2Exception.streamError(streamId, Http2Error.STREAM_CLOSED,
                    "HEADERS on stream %d after its END_STREAM", streamId));
            }
        }
    }

    /** Throws {@code t} from a method that cannot declare it (the reader handles a thrown Http2Exception). */
    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void raise(Throwable t) throws T {
        throw (T) t;
    }
}
