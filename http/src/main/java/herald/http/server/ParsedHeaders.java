package herald.http.server;

import io.netty.handler.codec.http.HttpHeaders;

/**
 * Headers a codec keeps as it parsed them: field {@code i} has a lower-case {@link #name} and a {@link #value} made
 * a String only when read. Ring's {@code :headers} map is built straight from them ({@link RingRequest}) while they
 * are {@link #plain}; after a change (or a call only a copy serves) they are read through {@code HttpHeaders}.
 */
public abstract class ParsedHeaders extends HttpHeaders {
    /** True while {@link #count}, {@link #name} and {@link #value} are still the headers (nothing changed them). */
    public abstract boolean plain();

    public abstract int count();

    /** The lower-case name of field {@code i}. */
    public abstract String name(int i);

    public abstract String value(int i);
}
