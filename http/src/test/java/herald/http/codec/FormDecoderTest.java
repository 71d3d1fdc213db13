package herald.http.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import clojure.lang.IPersistentMap;
import clojure.lang.PersistentVector;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class FormDecoderTest {
  private static final Charset UTF8 = StandardCharsets.UTF_8;

  private static IPersistentMap both(String s, Charset cs) {
    IPersistentMap text = FormDecoder.decode(s, cs, 1000);
    byte[] b = s.getBytes(StandardCharsets.ISO_8859_1);
    IPersistentMap bytes = FormDecoder.decode(b, 0, b.length, cs, 1000);
    assertEquals(text, bytes, "text and byte decoding agree for " + s);
    return text;
  }

  @Test
  void repeatedKeysBecomeVectorsInOrder() {
    IPersistentMap m = both("a=1&b=2&a=3&a=4", UTF8);
    assertEquals(PersistentVector.create("1", "3", "4"), m.valAt("a"));
    assertEquals("2", m.valAt("b"));
  }

  @Test
  void plusPercentAndUnicode() {
    IPersistentMap m = both("q=a+b%2Bc&e=%E2%82%AC%20x&k%C3%A9y=v", UTF8);
    assertEquals("a b+c", m.valAt("q"));
    assertEquals("€ x", m.valAt("e"));
    assertEquals("v", m.valAt("kéy"));
  }

  @Test
  void emptyValuesKeysAndPairs() {
    IPersistentMap m = both("a=&b&&=x&c=1=2&", UTF8);
    assertEquals("", m.valAt("a"));
    assertEquals("", m.valAt("b"));
    assertEquals("1=2", m.valAt("c"));
    assertEquals(3, m.count());
    assertEquals(0, both("", UTF8).count());
    assertEquals(0, FormDecoder.decode((String) null, UTF8, 10).count());
  }

  @Test
  void malformedEscapesAreKeptLiterally() {
    IPersistentMap m = both("a=%zz&b=%&c=%4&d=100%&e=%C3%28", UTF8);
    assertEquals("%zz", m.valAt("a"));
    assertEquals("%", m.valAt("b"));
    assertEquals("%4", m.valAt("c"));
    assertEquals("100%", m.valAt("d"));
    assertEquals("\uFFFD(", m.valAt("e"));
  }

  @Test
  void charsetOfTheRequest() {
    IPersistentMap m = both("n=%E9t%E9", StandardCharsets.ISO_8859_1);
    assertEquals("été", m.valAt("n"));
  }

  @Test
  void tooManyParams() {
    TooManyParamsException e = assertThrows(TooManyParamsException.class, () -> FormDecoder.decode("a=1&b=2&c=3", UTF8, 2));
    assertEquals(2, e.limit());
    assertEquals(2, FormDecoder.decode("a=1&b=2", UTF8, 2).count());
  }

  @Test
  void percentDecoderReturnsTheSameStringWhenNothingToDecode() {
    String s = "/plain/path";
    assertEquals(s, PercentDecoder.decodePath(s));
    assertEquals("a+b", PercentDecoder.decodePath("a+b"));
  }
}
