package herald.http.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import clojure.java.api.Clojure;
import clojure.lang.IFn;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** bench/http.sh's herald side serves the TechEmpower routes in every mode it is run in, plain and routed. */
class BenchAppTest {
  private static final IFn REQUIRE = Clojure.var("clojure.core", "require");

  @ParameterizedTest
  @CsvSource({"event-loop,false", "virtual-threads,false", "event-loop,true"})
  void servesPlaintextAndJson(String mode, boolean routed) throws Exception {
    REQUIRE.invoke(Clojure.read("herald.http"));
    REQUIRE.invoke(Clojure.read("herald.http.bench-app"));
    Object handler = routed
        ? Clojure.var("herald.http.bench-app", "routed-handler").invoke()
        : Clojure.var("herald.http.bench-app", "handler");
    Object opts = Clojure.read("{:port 0 :host \"127.0.0.1\" :mode :" + mode + "}");
    Object server = Clojure.var("herald.http", "start-server").invoke(handler, opts);
    try {
      int port = ((Number) Clojure.var("herald.http", "server-port").invoke(server)).intValue();
      HttpClient client = HttpClient.newHttpClient();
      HttpResponse<String> plain = get(client, port, "/plaintext");
      assertEquals(200, plain.statusCode());
      assertEquals("Hello, World!", plain.body());
      assertEquals("text/plain", plain.headers().firstValue("content-type").orElse(""));
      HttpResponse<String> json = get(client, port, "/json");
      assertEquals(200, json.statusCode());
      assertEquals("{\"message\":\"Hello, World!\"}", json.body());
      assertEquals("application/json", json.headers().firstValue("content-type").orElse(""));
      assertEquals(404, get(client, port, "/nope").statusCode());
    } finally {
      Clojure.var("clojure.core", "deref").invoke(Clojure.var("herald.http", "stop-server").invoke(server));
    }
  }

  private static HttpResponse<String> get(HttpClient client, int port, String path) throws Exception {
    return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
