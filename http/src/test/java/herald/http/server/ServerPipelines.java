package herald.http.server;

import clojure.lang.AFn;
import clojure.lang.IFn;
import herald.http.config.ServerConfig;
import herald.http.http2.PrefaceDetector;
import io.netty.channel.DefaultChannelId;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The pipeline {@link ServerInitializer} gives a plaintext connection, on an {@link EmbeddedChannel} (which is no
 * SocketChannel, so the initializer's own entry cannot take it): herald's HTTP/1.1 decoder and connection handler,
 * or, with {@code http2} on, the preface detector that picks HTTP/2 or HTTP/1.1 from the first bytes. For tests
 * outside this package (the fuzz targets in {@code herald.http.fuzz}).
 */
public final class ServerPipelines {
    private static final ExecutorService BLOCKING = Executors.newVirtualThreadPerTaskExecutor();

    private ServerPipelines() {}

    /**
     * A connection of a server with {@code config} and {@code handler} (and {@code websocketAdapter}, may be null);
     * handler errors the server logs are added to {@code errors}.
     */
    public static EmbeddedChannel plaintext(ServerConfig config, IFn handler, IFn websocketAdapter,
                                            List<Throwable> errors) {
        IFn logger = new AFn() {
            @Override
            public Object invoke(Object t, Object req) {
                errors.add((Throwable) t);
                return null;
            }
        };
        ServerContext server = new ServerContext(config, new Hooks(handler, logger, null, websocketAdapter), null,
            BLOCKING, new DefaultChannelGroup(GlobalEventExecutor.INSTANCE));
        ServerInitializer init = new ServerInitializer(server);
        // a server channel as parent, as for an accepted connection: Netty's HTTP/2 multiplexer takes a channel
        // without one for a client's, and refuses the client-initiated stream 1 ("misconfigured for upgrade")
        EmbeddedChannel ch = new EmbeddedChannel(new LocalServerChannel(), DefaultChannelId.newInstance(), true, false);
        if (config.http2) {
            ch.pipeline().addLast("herald-h2c-preface", new PrefaceDetector(init));
        } else {
            init.addHttp1(ch.pipeline(), false);
        }
        return ch;
    }

    /** Every status the server answers by itself ({@link Refusal}). */
    public static java.util.Set<Integer> refusalStatuses() {
        java.util.Set<Integer> s = new java.util.TreeSet<>();
        for (Refusal r : Refusal.values()) {
            s.add(r.status);
        }
        return s;
    }
}
