package herald.servers;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * A single-node OpenSearch for herald's tests, started as a child JVM by herald.feed.servers.opensearch.
 *
 * <p>Usage: {@code java -cp ... herald.servers.OpenSearchMain HOME HTTP_PORT TRANSPORT_PORT}. Binds 127.0.0.1 only,
 * keeps data, logs and config under HOME, adds the Netty 4 transport (HTTP) and the common analysis module (the
 * {@code lowercase} filter with {@code language: greek}). No security manager is installed (this is not
 * OpenSearch's Bootstrap), so it runs on any JDK OpenSearch supports. Prints {@code started} on stdout once the
 * node is up. Stops (closing the node) when its stdin reaches end of file: the parent closes it, or dies.
 */
public final class OpenSearchMain {
    private OpenSearchMain() {}

    /** Node's constructor taking classpath plugins is protected: this subclass exposes it. */
    static final class PluginNode extends Node {
        PluginNode(Environment env, List<Class<? extends Plugin>> plugins) {
            super(env, plugins, true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: OpenSearchMain HOME HTTP_PORT TRANSPORT_PORT");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        Settings settings = Settings.builder()
            .put("cluster.name", "herald-test")
            .put("node.name", "herald-test")
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("network.host", "127.0.0.1")
            .put("http.port", args[1])
            .put("transport.port", args[2])
            .put("discovery.type", "single-node")
            .put("http.type", "netty4")
            .put("transport.type", "netty4")
            // a test machine's disk may be fuller than the default watermarks allow
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .build();
        LogConfigurator.configureWithoutConfig(settings);
        Environment env = InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), home.resolve("config"),
                                                                      () -> "herald-test");
        Node node = new PluginNode(env, List.of(Netty4Plugin.class, CommonAnalysisPlugin.class));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> closeQuietly(node)));
        node.start();
        System.out.println("started");
        System.out.flush();
        InputStream in = System.in;
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
            // nothing to read: the parent only closes stdin
        }
        closeQuietly(node);
        System.exit(0);
    }

    private static void closeQuietly(Node node) {
        try {
            node.close();
        } catch (IOException | RuntimeException e) {
            System.err.println("closing the node: " + e);
        }
    }
}
