package herald.json;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import clojure.lang.BigInt;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentVector;
import java.io.ByteArrayInputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class JsonCodecTest {
  private static Object read(String s) {
    return JsonReader.DEFAULT.read(s);
  }

  @Test
  void numbers() {
    assertEquals(42L, read("42"));
    assertEquals(Long.MAX_VALUE, read("9223372036854775807"));
    assertEquals(BigInt.fromBigInteger(new java.math.BigInteger("9223372036854775808")), read("9223372036854775808"));
    assertEquals(-1.5e3, read("-1.5e3"));
    JsonReader dec = new JsonReader(JsonReader.Keys.STRINGS, null, true, false, 10, 100);
    assertEquals(new BigDecimal("0.1"), dec.read("0.1"));
  }

  @Test
  void objectsArraysKeys() {
    IPersistentMap m = (IPersistentMap) JsonReader.KEYWORDIZING.read("{\"a\":[1,{\"ns/b\":null}],\"a\":true}");
    assertEquals(Boolean.TRUE, m.valAt(Keyword.intern("a")), "last duplicate wins");
    assertEquals(1, m.count());
    IPersistentMap n = (IPersistentMap) read("{\"x\":[{\"ns/b\":null}]}");
    IPersistentMap inner = (IPersistentMap) ((PersistentVector) n.valAt("x")).nth(0);
    assertTrue(inner.containsKey("ns/b"));
    assertNull(inner.valAt("ns/b"));
  }

  @Test
  void escapesAndEncodings() {
    assertEquals("a/b\u00e9\uD83D\uDE00\n", read("\"a\\/b\\u00e9\\ud83d\\ude00\\n\""));
    byte[] utf16 = "{\"k\":\"é\"}".getBytes(StandardCharsets.UTF_16BE);
    assertEquals("é", ((IPersistentMap) JsonReader.DEFAULT.read(utf16, 0, utf16.length)).valAt("k"));
    assertEquals(PersistentVector.create(1L, 2L),
        JsonReader.DEFAULT.read(new ByteArrayInputStream("[1, 2]".getBytes(StandardCharsets.UTF_8))));
  }

  @Test
  void malformedInputIsAlwaysMalformedJsonException() {
    String[] bad = {"", "   ", "{", "[1,2", "{\"a\":}", "[1] 2", "{} x", "\"\\q\"", "\"abc", "tru", "01", "[1,]",
        "{\"a\" 1}", "NaN", "'a'", "\"\u0001\"", "[".repeat(600) + "]".repeat(600)};
    for (String s : bad) {
      MalformedJsonException e = assertThrows(MalformedJsonException.class, () -> read(s), s);
      assertTrue(e.getMessage().startsWith("malformed JSON: "), e.getMessage());
      assertTrue(!e.detail().contains("Source:") && !e.detail().contains("StreamReadConstraints"), e.detail());
    }
    byte[] badUtf8 = {'"', (byte) 0xC3, (byte) 0x28, '"'};
    assertThrows(MalformedJsonException.class, () -> JsonReader.DEFAULT.read(badUtf8, 0, 4));
    MalformedJsonException e = assertThrows(MalformedJsonException.class, () -> read("{\"a\":1,\n \"b\": x}"));
    assertEquals(2, e.line());
    assertTrue(e.column() > 1);
  }

  @Test
  void limits() {
    JsonReader small = new JsonReader(JsonReader.Keys.STRINGS, null, false, true, 3, 5);
    assertThrows(MalformedJsonException.class, () -> small.read("[[[[1]]]]"));
    assertEquals(PersistentVector.create((Object) PersistentVector.create(1L)), small.read("[[1]]"));
    assertThrows(MalformedJsonException.class, () -> small.read("\"123456\""));
    assertThrows(MalformedJsonException.class, () -> small.read("{\"a\":1,\"a\":2}"));
  }

  @Test
  void writerRoundTripsAndRejectsWhatJsonCannotHold() {
    Object v = JsonReader.DEFAULT.read("{\"a\":[1,2.5,\"x\\\"y\",null,false,{\"b\":{}}]}");
    byte[] b = JsonWriter.DEFAULT.writeBytes(v);
    assertEquals(v, JsonReader.DEFAULT.read(b, 0, b.length));
    assertEquals("{\"a\":[1,2.5,\"x\\\"y\",null,false,{\"b\":{}}]}", JsonWriter.DEFAULT.writeString(v));
    assertArrayEquals("\"ns/k\"".getBytes(StandardCharsets.UTF_8), JsonWriter.DEFAULT.writeBytes(Keyword.intern("ns", "k")));
    assertThrows(JsonEncodeException.class, () -> JsonWriter.DEFAULT.writeString(Double.NaN));
    assertThrows(JsonEncodeException.class, () -> JsonWriter.DEFAULT.writeString(new Object()));
    assertThrows(JsonEncodeException.class,
        () -> JsonWriter.DEFAULT.writeString(clojure.lang.PersistentHashMap.create(PersistentVector.EMPTY, 1)));
    assertEquals("\"1970-01-01T00:00:00Z\"", JsonWriter.DEFAULT.writeString(new java.util.Date(0)));
    assertEquals("\"1970-01-01T00:00:00Z\"", JsonWriter.DEFAULT.writeString(new java.sql.Date(0)));
  }

  @Test
  void concurrentUseFromVirtualAndPlatformThreads() throws Exception {
    Object doc = JsonReader.DEFAULT.read("{\"a\":[1,2,{\"b\":\"" + "x".repeat(5000) + "\"}],\"c\":null}");
    String expected = JsonWriter.DEFAULT.writeString(doc);
    java.util.List<Thread> threads = new java.util.ArrayList<>();
    java.util.concurrent.atomic.AtomicInteger bad = new java.util.concurrent.atomic.AtomicInteger();
    Runnable work = () -> {
      for (int i = 0; i < 300; i++) {
        byte[] b = JsonWriter.DEFAULT.writeBytes(doc);
        if (!doc.equals(JsonReader.DEFAULT.read(b, 0, b.length))) bad.incrementAndGet();
        if (!expected.equals(JsonWriter.DEFAULT.writeString(doc))) bad.incrementAndGet();
      }
    };
    for (int i = 0; i < 8; i++) threads.add(Thread.ofVirtual().start(work));
    for (int i = 0; i < 2; i++) threads.add(Thread.ofPlatform().start(work));
    for (Thread t : threads) t.join();
    assertEquals(0, bad.get());
  }
}
