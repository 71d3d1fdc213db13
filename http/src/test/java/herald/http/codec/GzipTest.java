package herald.http.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.Random;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;

class GzipTest {
  @Test
  void compressesToStandardGzip() throws IOException {
    Random rnd = new Random(42);
    for (int len : new int[] {0, 1, 100, 70_000, 300_000}) {
      byte[] data = new byte[len];
      for (int i = 0; i < len; i++) data[i] = (byte) ('a' + rnd.nextInt(4));
      for (int level : new int[] {1, 6, 9}) {
        byte[] gz = Gzip.compress(data, 0, len, level);
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(gz))) {
          assertArrayEquals(data, in.readAllBytes(), "len " + len + " level " + level);
        }
      }
    }
  }

  @Test
  void acceptEncodingNegotiation() {
    assertTrue(Gzip.acceptsGzip("gzip"));
    assertTrue(Gzip.acceptsGzip("deflate, gzip;q=0.5, br"));
    assertTrue(Gzip.acceptsGzip("GZIP"));
    assertTrue(Gzip.acceptsGzip("*"));
    assertTrue(Gzip.acceptsGzip("x-gzip"));
    assertFalse(Gzip.acceptsGzip("gzip;q=0"));
    assertFalse(Gzip.acceptsGzip("gzip; q=0.0, *"));
    assertFalse(Gzip.acceptsGzip("*;q=0"));
    assertFalse(Gzip.acceptsGzip("identity"));
    assertFalse(Gzip.acceptsGzip("br, deflate"));
    assertFalse(Gzip.acceptsGzip(""));
    assertFalse(Gzip.acceptsGzip(null));
    assertEquals(true, Gzip.acceptsGzip("identity;q=1, *;q=0.1"));
  }

  @Test
  void streamsCompressToStandardGzip() throws IOException {
    Random rnd = new Random(7);
    for (int len : new int[] {0, 1, 5000, 8192, 200_000}) {
      byte[] data = new byte[len];
      for (int i = 0; i < len; i++) data[i] = (byte) ('a' + rnd.nextInt(3));
      // a source that hands out small, irregular pieces, as a slow producer would
      java.io.InputStream source = new ByteArrayInputStream(data) {
        @Override
        public synchronized int read(byte[] b, int off, int n) {
          return super.read(b, off, Math.min(n, 1 + rnd.nextInt(3000)));
        }
      };
      try (GzipInputStream gz = new GzipInputStream(source, 6);
           GZIPInputStream back = new GZIPInputStream(gz)) {
        assertArrayEquals(data, back.readAllBytes(), "len " + len);
      }
    }
  }

  @Test
  void aSlowSourceIsFlushedPieceByPiece() throws IOException {
    java.io.PipedOutputStream producer = new java.io.PipedOutputStream();
    java.io.PipedInputStream source = new java.io.PipedInputStream(producer, 65536);
    producer.write("first part of a slow stream\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    GzipInputStream gz = new GzipInputStream(source, 6);
    GZIPInputStream back = new GZIPInputStream(gz);
    byte[] buf = new byte[100];
    int n = back.read(buf);
    assertEquals("first part of a slow stream\n", new String(buf, 0, n, java.nio.charset.StandardCharsets.UTF_8),
        "available before the producer writes more or closes");
    producer.close();
    assertEquals(-1, back.read(buf));
    back.close();
  }
}
