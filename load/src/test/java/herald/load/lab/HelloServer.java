package herald.load.lab;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/**
 * The lab test's small target: the JDK's HTTP server answering "hello" on 127.0.0.1:PORT, allocating KIB
 * kilobytes of garbage per request (default 256) so that its GC log has collections in a short run. Prints
 * READY PORT once listening. Usage: java herald.load.lab.HelloServer PORT [KIB].
 */
public final class HelloServer {
  private HelloServer() {}

  /** Starts the server; it runs until the process is stopped. */
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    int kib = args.length > 1 ? Integer.parseInt(args[1]) : 256;
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 256);
    byte[] body = "hello\n".getBytes(StandardCharsets.UTF_8);
    server.createContext("/", exchange -> {
      byte[] garbage = new byte[kib * 1024];
      garbage[garbage.length - 1] = 1;
      exchange.getResponseHeaders().add("X-Garbage", Integer.toString(garbage.length));
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.setExecutor(Executors.newFixedThreadPool(4));
    server.start();
    System.out.println("READY " + port);
  }
}
