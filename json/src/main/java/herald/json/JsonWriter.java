package herald.json;

import clojure.lang.BigInt;
import clojure.lang.IFn;
import clojure.lang.IMapIterable;
import clojure.lang.IPersistentMap;
import clojure.lang.IPersistentVector;
import clojure.lang.Keyword;
import clojure.lang.Named;
import clojure.lang.Ratio;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.io.SegmentedStringWriter;
import com.fasterxml.jackson.core.json.UTF8JsonGenerator;
import com.fasterxml.jackson.core.util.BufferRecycler;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.TemporalAccessor;
import java.util.Date;
import java.util.Iterator;
import java.util.Map;
import java.util.UUID;

/**
 * Writes Clojure data as JSON with Jackson's streaming generator (no databind), straight into a byte[] or
 * a String through Jackson's recycled buffers.
 *
 * <p>Conversions: maps to objects (keys: keywords as {@code "ns/name"} or {@code "name"}, Strings, symbols,
 * numbers, UUIDs, chars and booleans as their string form); vectors, lists, seqs, sets, arrays and other
 * Iterables to arrays; keywords and symbols to strings (without the colon); chars, UUIDs to strings;
 * {@code Instant}/{@code Date} to ISO-8601 UTC strings, other {@code java.time} values to their ISO
 * {@code toString}; integers and {@code BigInt}/{@code BigInteger}/{@code BigDecimal} to exact numbers;
 * ratios to double numbers (lossy); nil to null. NaN and infinities, and any other class, throw
 * {@link JsonEncodeException}. Instances are immutable and thread-safe.
 */
public final class JsonWriter {
  /** Compact output. */
  public static final JsonWriter DEFAULT = new JsonWriter(false, null);
  /** Indented output. */
  public static final JsonWriter PRETTY = new JsonWriter(true, null);

  private final JsonFactory factory = JsonFactories.DEFAULT[1];
  private final boolean pretty;
  private final IFn keyFn;

  /**
   * A writer; {@code keyFn}, when not null, turns every map key into the String written (it must return
   * a String), e.g. to camelCase keyword keys.
   */
  public JsonWriter(boolean pretty, IFn keyFn) {
    this.pretty = pretty;
    this.keyFn = keyFn;
  }

  /** Returns the UTF-8 JSON bytes of {@code x}. */
  public byte[] writeBytes(Object x) {
    BufferRecycler br = JsonFactories.recycler();
    try (ByteArrayBuilder bb = new ByteArrayBuilder(br)) {
      try (JsonGenerator g = generator(factory.createGenerator(bb))) {
        write(g, x);
      }
      return bb.getClearAndRelease();
    } catch (JsonProcessingException e) {
      throw new JsonEncodeException("cannot write JSON: " + e.getOriginalMessage(), x, e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      br.releaseToPool();
    }
  }

  /** Returns the JSON text of {@code x}. */
  public String writeString(Object x) {
    BufferRecycler br = JsonFactories.recycler();
    try {
      SegmentedStringWriter sw = new SegmentedStringWriter(br);
      try (JsonGenerator g = generator(factory.createGenerator(sw))) {
        write(g, x);
      }
      return sw.getAndClear();
    } catch (JsonProcessingException e) {
      throw new JsonEncodeException("cannot write JSON: " + e.getOriginalMessage(), x, e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      br.releaseToPool();
    }
  }

  /** Writes the UTF-8 JSON of {@code x} to {@code out} (not closed). */
  public void write(Object x, OutputStream out) {
    try (JsonGenerator g = generator(JsonFactories.forCurrentThread(JsonFactories.DEFAULT).createGenerator(out))) {
      g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
      write(g, x);
    } catch (JsonProcessingException e) {
      throw new JsonEncodeException("cannot write JSON: " + e.getOriginalMessage(), x, e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private JsonGenerator generator(JsonGenerator g) {
    return pretty ? g.useDefaultPrettyPrinter() : g;
  }

  /** Writes {@code x} as one JSON value to {@code g}. */
  public void write(JsonGenerator g, Object x) throws IOException {
    if (x instanceof String s) writeText(g, s);
    else if (x instanceof Keyword k) g.writeString(k.sym.toString());
    else if (x instanceof Long l) g.writeNumber(l);
    else if (x instanceof Map<?, ?> m) writeMap(g, m);
    else if (x instanceof IPersistentVector v) writeVector(g, v);
    else if (x instanceof Iterable<?> it) writeArray(g, it);
    else if (x == null) g.writeNull();
    else if (x instanceof Boolean b) g.writeBoolean(b);
    else if (x instanceof Double d) writeDouble(g, d);
    else if (x instanceof Integer i) g.writeNumber(i);
    else writeOther(g, x);
  }

  private void writeOther(JsonGenerator g, Object x) throws IOException {
    if (x instanceof BigInt b) {
      if (b.bipart == null) g.writeNumber(b.lpart); else g.writeNumber(b.bipart);
    } else if (x instanceof BigDecimal d) g.writeNumber(d);
    else if (x instanceof BigInteger b) g.writeNumber(b);
    else if (x instanceof Ratio r) writeDouble(g, r.doubleValue());
    else if (x instanceof Float f) writeDouble(g, f.doubleValue());
    else if (x instanceof Short || x instanceof Byte) g.writeNumber(((Number) x).intValue());
    else if (x instanceof UUID || x instanceof Character) g.writeString(x.toString());
    else if (x instanceof Named n) g.writeString(name(n));
    else if (x instanceof ZonedDateTime z) g.writeString(DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(z));
    else if (x instanceof TemporalAccessor) g.writeString(x.toString());
    else if (x instanceof Date d) g.writeString(Instant.ofEpochMilli(d.getTime()).toString());
    else if (x instanceof Object[] a) {
      g.writeStartArray(a, a.length);
      for (Object o : a) write(g, o);
      g.writeEndArray();
    } else if (x instanceof CharSequence cs) writeText(g, cs.toString());
    else throw new JsonEncodeException("cannot write a " + x.getClass().getName() + " as JSON", x, null);
  }

  /**
   * Writes a string value; to Jackson's byte generator one of {@link #LONG_TEXT} chars or more goes as a char[].
   * Its String loop calls {@code String.charAt} per char, and in a JVM whose {@code charAt} profile has seen UTF-16
   * strings (as in the Clojure JVMs measured) C2 keeps a call to {@code StringUTF16.charAt} in that loop, which
   * then reloads the String's fields every turn and is neither unrolled nor freed of range checks: ~3x slower per
   * char (docs/json.md, bench/results/json-write.md). The bytes written are the same.
   */
  private static void writeText(JsonGenerator g, String s) throws IOException {
    int n = s.length();
    if (n >= LONG_TEXT && g instanceof UTF8JsonGenerator) g.writeString(s.toCharArray(), 0, n);
    else g.writeString(s);
  }

  /** The length from which {@link #writeText} hands the byte generator a char[] (chosen, not measured: a short
   *  string's loop is short, and the field names and keywords written beside it take the String path anyway). */
  private static final int LONG_TEXT = 32;

  private static void writeDouble(JsonGenerator g, double d) throws IOException {
    if (Double.isNaN(d) || Double.isInfinite(d)) {
      throw new JsonEncodeException("cannot write the non-finite number " + d + " as JSON", d, null);
    }
    g.writeNumber(d);
  }

  private void writeVector(JsonGenerator g, IPersistentVector v) throws IOException {
    int n = v.count();
    g.writeStartArray(v, n);
    for (int i = 0; i < n; i++) write(g, v.nth(i));
    g.writeEndArray();
  }

  private void writeArray(JsonGenerator g, Iterable<?> it) throws IOException {
    g.writeStartArray();
    for (Object o : it) write(g, o);
    g.writeEndArray();
  }

  private void writeMap(JsonGenerator g, Map<?, ?> m) throws IOException {
    g.writeStartObject(m);
    if (m instanceof IMapIterable mi) {
      Iterator<?> ks = mi.keyIterator();
      Iterator<?> vs = mi.valIterator();
      while (ks.hasNext()) {
        g.writeFieldName(key(ks.next()));
        write(g, vs.next());
      }
    } else if (m instanceof IPersistentMap pm) {
      for (Object o : pm) {
        Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
        g.writeFieldName(key(e.getKey()));
        write(g, e.getValue());
      }
    } else {
      for (Map.Entry<?, ?> e : m.entrySet()) {
        g.writeFieldName(key(e.getKey()));
        write(g, e.getValue());
      }
    }
    g.writeEndObject();
  }

  private String key(Object k) {
    if (keyFn != null) {
      Object s = keyFn.invoke(k);
      if (s instanceof String str) return str;
      throw new JsonEncodeException("the key fn returned a " + (s == null ? "nil" : s.getClass().getName())
          + " for the key " + k + "; it must return a String", k, null);
    }
    if (k instanceof Keyword kw) return kw.sym.toString();
    if (k instanceof String s) return s;
    if (k instanceof Named n) return name(n);
    if (k instanceof Number || k instanceof UUID || k instanceof Character || k instanceof Boolean) return k.toString();
    throw new JsonEncodeException("cannot write a map key of class "
        + (k == null ? "nil" : k.getClass().getName()) + " as a JSON object key", k, null);
  }

  private static String name(Named n) {
    String ns = n.getNamespace();
    return ns == null ? n.getName() : ns + "/" + n.getName();
  }
}
