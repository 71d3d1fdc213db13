package herald.http.server;

import io.netty.channel.Channel;
import io.netty.handler.ssl.SslHandler;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/** The facts of one connection that Ring requests carry (addresses, port, TLS), computed once per channel. */
public final class ConnectionInfo {
    private static final Object NO_CERT = new Object();

    /** {@code :remote-addr} of a request over a Unix domain socket (the peer is on this host). */
    public static final String UNIX_REMOTE_ADDR = "127.0.0.1";
    /** {@code :server-name} of a request over a Unix domain socket that has no Host header. */
    public static final String UNIX_SERVER_NAME = "localhost";
    /** {@code :server-port} of a request over a Unix domain socket: the http scheme's default port. */
    public static final int UNIX_SERVER_PORT = 80;

    private static boolean isUnix(SocketAddress a) {
        return a instanceof java.net.UnixDomainSocketAddress || a instanceof io.netty.channel.unix.DomainSocketAddress;
    }

    final Integer serverPort;
    final String remoteAddr;
    final String localAddr;
    final boolean proxy;
    /** The channel's TLS handler; null on a plaintext connection. */
    final SslHandler tls;
    /** The client certificate once read: NO_CERT when there is none; null until read. */
    private volatile Object clientCert;

    /**
     * The facts of {@code ch}; {@code fallbackPort} when its local address is not an inet address. A Unix domain
     * socket connection has no addresses: it gets {@link #UNIX_REMOTE_ADDR}, {@link #UNIX_SERVER_NAME} (when the
     * request has no Host) and {@link #UNIX_SERVER_PORT}, what a client on this host going through TCP would get.
     */
    static ConnectionInfo of(Channel ch, int fallbackPort, boolean proxy) {
        SocketAddress local = ch.localAddress();
        if (isUnix(local)) {
            return new ConnectionInfo(UNIX_SERVER_PORT, UNIX_REMOTE_ADDR, UNIX_SERVER_NAME, proxy,
                ch.pipeline().get(SslHandler.class));
        }
        int port = local instanceof InetSocketAddress isa ? isa.getPort() : fallbackPort;
        return new ConnectionInfo(port, ip(ch.remoteAddress()), ip(local), proxy, ch.pipeline().get(SslHandler.class));
    }

    /**
     * The client's certificate (the leaf of the chain it presented), or null; read once from the TLS session,
     * which is established before any request on the connection is decoded.
     */
    X509Certificate clientCert() {
        Object c = clientCert;
        if (c == null) {
            X509Certificate leaf = peerLeaf(tls.engine().getSession());
            c = leaf != null ? leaf : NO_CERT;
            clientCert = c;
        }
        return c instanceof X509Certificate x ? x : null;
    }

    private static X509Certificate peerLeaf(SSLSession session) {
        try {
            Certificate[] chain = session.getPeerCertificates();
            return chain.length > 0 && chain[0] instanceof X509Certificate x ? x : null;
        } catch (SSLPeerUnverifiedException none) {
            return null;
        }
    }

    private static String ip(SocketAddress a) {
        if (a instanceof InetSocketAddress isa) {
            return isa.getAddress() != null ? isa.getAddress().getHostAddress() : isa.getHostString();
        }
        return a == null ? "" : a.toString();
    }

    public ConnectionInfo(int serverPort, String remoteAddr, String localAddr, boolean proxy) {
        this(serverPort, remoteAddr, localAddr, proxy, null);
    }

    ConnectionInfo(int serverPort, String remoteAddr, String localAddr, boolean proxy, SslHandler tls) {
        this.serverPort = serverPort;
        this.remoteAddr = remoteAddr;
        this.localAddr = localAddr;
        this.proxy = proxy;
        this.tls = tls;
    }
}
