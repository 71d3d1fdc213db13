package herald.http.server;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The file of a Unix domain socket the server listens on: a stale socket left by a crashed run is replaced, a live
 * one (a process accepts on it) or any other kind of file is refused, permissions are set after the bind and the
 * file is removed on stop.
 */
public final class UnixSocketFile {
    /** Thrown when the path is taken: a live socket or a file that is not a socket. */
    public static final class InUseException extends IllegalStateException {
        public final boolean live;

        InUseException(String message, boolean live) {
            super(message);
            this.live = live;
        }
    }

    private UnixSocketFile() {}

    /**
     * Makes {@code path} free to bind: nothing there, or a stale socket (connecting is refused) which is deleted.
     * Throws {@link InUseException} for a live socket or a path that is not a socket (never deleted).
     */
    public static void prepare(Path path) throws IOException {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (java.nio.file.NoSuchFileException none) {
            return;
        }
        if (!a.isOther()) {
            throw new InUseException(path + " exists and is not a socket", false);
        }
        if (live(path)) {
            throw new InUseException(path + " is a live socket: another process accepts on it", true);
        }
        Files.deleteIfExists(path); // stale: left by a process that did not stop cleanly
    }

    /** True when a process accepts connections on the socket at {@code path}. */
    static boolean live(Path path) {
        try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            return c.connect(UnixDomainSocketAddress.of(path));
        } catch (IOException refused) {
            return false;
        }
    }

    /** Sets the socket file's permissions, e.g. {@code "rw-rw----"}; nothing when {@code perms} is null. */
    static void permit(Path path, String perms) throws IOException {
        if (perms != null) {
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(perms));
        }
    }

    /** Removes the socket file, if it is still there and still a socket. */
    static void remove(Path path) {
        try {
            if (Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).isOther()) {
                Files.deleteIfExists(path);
            }
        } catch (IOException gone) {
            // already removed (the channel's close may delete it)
        }
    }
}
