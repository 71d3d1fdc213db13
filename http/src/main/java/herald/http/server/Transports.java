package herald.http.server;

import herald.http.config.Transport;
import herald.http.exception.TransportUnavailableException;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerDomainSocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.file.Path;

/**
 * The Netty transport a server runs on: its event loop factory and its server channel classes for TCP and for Unix
 * domain sockets. epoll on Linux, kqueue on macOS/BSD (only when netty-transport-native-kqueue is on the classpath:
 * it is looked up by name, so herald does not depend on it), NIO everywhere else (NIO serves Unix domain sockets
 * through the JDK's {@link UnixDomainSocketAddress}, JDK 16+).
 */
record Transports(String name, IoHandlerFactory io, Class<? extends ServerChannel> tcp,
                  Class<? extends ServerChannel> unix, boolean nettyUnixAddress) {

    private static final String KQUEUE = "io.netty.channel.kqueue.";

    /** The transport for {@code t}: AUTO prefers epoll, then kqueue, then NIO; EPOLL and KQUEUE fail when absent. */
    static Transports choose(Transport t) {
        return switch (t) {
            case EPOLL -> {
                if (!Epoll.isAvailable()) {
                    throw new TransportUnavailableException("epoll transport unavailable", Epoll.unavailabilityCause());
                }
                yield epoll();
            }
            case KQUEUE -> {
                Transports k = kqueue();
                if (k == null) {
                    throw new TransportUnavailableException("kqueue transport unavailable (needs macOS or BSD and "
                        + "io.netty:netty-transport-native-kqueue on the classpath)", null);
                }
                yield k;
            }
            case NIO -> nio();
            case AUTO -> Epoll.isAvailable() ? epoll() : orNio(kqueue());
        };
    }

    private static Transports orNio(Transports t) {
        return t != null ? t : nio();
    }

    private static Transports epoll() {
        return new Transports("epoll", EpollIoHandler.newFactory(), EpollServerSocketChannel.class,
            EpollServerDomainSocketChannel.class, true);
    }

    private static Transports nio() {
        return new Transports("nio", NioIoHandler.newFactory(), NioServerSocketChannel.class,
            NioServerDomainSocketChannel.class, false);
    }

    /** kqueue when its classes and native library are there, else null. */
    @SuppressWarnings("unchecked")
    private static Transports kqueue() {
        try {
            ClassLoader cl = Transports.class.getClassLoader();
            Class<?> kq = Class.forName(KQUEUE + "KQueue", true, cl);
            if (!(Boolean) kq.getMethod("isAvailable").invoke(null)) {
                return null;
            }
            IoHandlerFactory io = (IoHandlerFactory) Class.forName(KQUEUE + "KQueueIoHandler", true, cl)
                .getMethod("newFactory").invoke(null);
            return new Transports("kqueue", io,
                (Class<? extends ServerChannel>) Class.forName(KQUEUE + "KQueueServerSocketChannel", true, cl),
                (Class<? extends ServerChannel>) Class.forName(KQUEUE + "KQueueServerDomainSocketChannel", true, cl),
                true);
        } catch (ReflectiveOperationException | LinkageError e) {
            return null;
        }
    }

    /** The address a Unix domain server channel of this transport binds for {@code path}. */
    SocketAddress unixAddress(Path path) {
        return nettyUnixAddress ? new DomainSocketAddress(path.toFile()) : UnixDomainSocketAddress.of(path);
    }
}
