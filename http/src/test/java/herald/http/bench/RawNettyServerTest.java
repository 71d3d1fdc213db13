package herald.http.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The benchmark ceiling speaks correct HTTP/1.1: routes, pipelining order, keep-alive, Date, close. */
class RawNettyServerTest {
  private static final Pattern DATE =
      Pattern.compile("\r\nDate: (Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d\\d [A-Z][a-z]{2} \\d{4} \\d\\d:\\d\\d:\\d\\d GMT\r\n");
  private static RawNettyServer server;

  @BeforeAll
  static void start() throws InterruptedException {
    server = RawNettyServer.start("127.0.0.1", 0, 1, "auto");
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  private static String get(String path, String version, String extraHeader) {
    return "GET " + path + " " + version + "\r\nHost: localhost\r\n" + extraHeader + "\r\n";
  }

  /** Reads {@code n} responses (each with a Content-Length) from {@code in}. */
  private static List<String> read(InputStream in, int n) throws IOException {
    List<String> responses = new ArrayList<>();
    ByteArrayOutputStream cur = new ByteArrayOutputStream();
    while (responses.size() < n) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      cur.write(b);
      String s = cur.toString(StandardCharsets.US_ASCII);
      int end = s.indexOf("\r\n\r\n");
      if (end >= 0) {
        Matcher m = Pattern.compile("Content-Length: (\\d+)").matcher(s);
        assertTrue(m.find(), "Content-Length in " + s);
        int length = Integer.parseInt(m.group(1));
        if (s.length() == end + 4 + length) {
          responses.add(s);
          cur.reset();
        }
      }
    }
    return responses;
  }

  @Test
  void answersPipelinedRequestsInOrderOnOneConnection() throws IOException {
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      String batch = get("/plaintext", "HTTP/1.1", "") + get("/json", "HTTP/1.1", "") + get("/nope", "HTTP/1.1", "")
          + "POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" + get("/plaintext", "HTTP/1.1", "");
      s.getOutputStream().write(batch.getBytes(StandardCharsets.US_ASCII));
      List<String> r = read(s.getInputStream(), 5);
      assertEquals(5, r.size());
      assertTrue(r.get(0).startsWith("HTTP/1.1 200 OK\r\n"), r.get(0));
      assertTrue(r.get(0).contains("\r\nContent-Type: text/plain\r\n"), r.get(0));
      assertTrue(r.get(0).contains("\r\nServer: Netty\r\n"), r.get(0));
      assertTrue(DATE.matcher(r.get(0)).find(), r.get(0));
      assertTrue(r.get(0).endsWith("\r\n\r\nHello, World!"), r.get(0));
      assertTrue(r.get(1).contains("\r\nContent-Type: application/json\r\n"), r.get(1));
      assertTrue(r.get(1).endsWith("\r\n\r\n{\"message\":\"Hello, World!\"}"), r.get(1));
      assertTrue(r.get(2).startsWith("HTTP/1.1 404 Not Found\r\n"), r.get(2));
      assertTrue(r.get(3).startsWith("HTTP/1.1 405 Method Not Allowed\r\n"), r.get(3));
      assertTrue(r.get(4).endsWith("Hello, World!"), r.get(4));
    }
  }

  @Test
  void closesAfterConnectionCloseAndKeepsHttp10AliveOnRequest() throws IOException {
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      s.getOutputStream().write((get("/json", "HTTP/1.0", "Connection: keep-alive\r\n")
          + get("/plaintext", "HTTP/1.1", "Connection: close\r\n")).getBytes(StandardCharsets.US_ASCII));
      List<String> r = read(s.getInputStream(), 2);
      assertEquals(2, r.size());
      assertTrue(r.get(0).contains("\r\nConnection: keep-alive\r\n"), r.get(0));
      assertTrue(r.get(0).endsWith("{\"message\":\"Hello, World!\"}"), r.get(0));
      assertTrue(r.get(1).contains("\r\nConnection: close\r\n"), r.get(1));
      assertEquals(-1, s.getInputStream().read(), "the server closes after Connection: close");
    }
  }

  @Test
  void answersMalformedRequestsWith400AndCloses() throws IOException {
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      s.getOutputStream().write("GET /plaintext HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"
          .getBytes(StandardCharsets.US_ASCII));
      List<String> r = read(s.getInputStream(), 1);
      assertTrue(r.get(0).startsWith("HTTP/1.1 400 Bad Request\r\n"), r.get(0));
      assertEquals(-1, s.getInputStream().read(), "the server closes after a malformed request");
    }
  }
}
