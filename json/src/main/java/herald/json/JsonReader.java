package herald.json;

import clojure.lang.BigInt;
import clojure.lang.IFn;
import clojure.lang.ITransientMap;
import clojure.lang.Keyword;
import clojure.lang.LazilyPersistentVector;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import clojure.lang.PersistentVector;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.CharConversionException;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reads JSON text into Clojure data with Jackson's streaming parser (no databind).
 *
 * <p>Objects become persistent maps (keys as Strings, keywords or whatever a key fn returns), arrays
 * persistent vectors, integers {@code Long} when they fit and {@link BigInt} otherwise, decimals
 * {@code Double} (or {@code BigDecimal} with {@code bigDecimals}; a decimal beyond the range of a double, such as
 * {@code 1e400}, is then an error rather than Infinity), {@code true/false/null} Booleans and nil.
 * Exactly one value is read: trailing content is an error. Duplicate keys: the last one wins, unless
 * {@code rejectDuplicateKeys}. Every syntax error or violated limit is a {@link MalformedJsonException}.
 * Instances are immutable and thread-safe.
 */
public final class JsonReader {
  /** How object keys are turned into map keys. */
  public enum Keys { STRINGS, KEYWORDS, FN }

  private static final int KEYWORD_CACHE_MAX = 4096;
  private static final ConcurrentHashMap<String, Keyword> KEYWORDS = new ConcurrentHashMap<>();
  private static final Object MISSING = new Object();

  /** String keys, doubles, default limits. */
  public static final JsonReader DEFAULT = new JsonReader(Keys.STRINGS, null, false, false,
      JsonFactories.DEFAULT_MAX_DEPTH, JsonFactories.DEFAULT_MAX_STRING);
  /** Keyword keys, doubles, default limits. */
  public static final JsonReader KEYWORDIZING = new JsonReader(Keys.KEYWORDS, null, false, false,
      JsonFactories.DEFAULT_MAX_DEPTH, JsonFactories.DEFAULT_MAX_STRING);

  private final JsonFactory[] factories;
  private final Keys keys;
  private final IFn keyFn;
  private final boolean bigDecimals;
  private final boolean rejectDuplicateKeys;

  public JsonReader(Keys keys, IFn keyFn, boolean bigDecimals, boolean rejectDuplicateKeys, int maxDepth,
      int maxStringLength) {
    if (keys == Keys.FN && keyFn == null) throw new IllegalArgumentException("Keys.FN needs a key fn");
    if (maxDepth < 1) throw new IllegalArgumentException("maxDepth must be >= 1: " + maxDepth);
    if (maxStringLength < 1) throw new IllegalArgumentException("maxStringLength must be >= 1: " + maxStringLength);
    this.factories = JsonFactories.get(maxDepth, maxStringLength);
    this.keys = keys;
    this.keyFn = keyFn;
    this.bigDecimals = bigDecimals;
    this.rejectDuplicateKeys = rejectDuplicateKeys;
  }

  /** Opens a parser over the input with the factory that suits the current thread. */
  @FunctionalInterface
  private interface Source {
    JsonParser open(JsonFactory f) throws IOException;
  }

  /** Reads one JSON value from UTF-8 (or UTF-16/32, detected) bytes. */
  public Object read(byte[] b, int off, int len) {
    return run(f -> f.createParser(b, off, len), null);
  }

  /** Reads one JSON value from a String. */
  public Object read(String s) {
    return run(f -> f.createParser(s), null);
  }

  /** Reads one JSON value from a stream (encoding detected, UTF-8 by default); closes the stream. */
  public Object read(InputStream in) {
    return run(f -> f.createParser(in), null);
  }

  /** Reads one JSON value from a Reader; closes the reader. */
  public Object read(Reader r) {
    return run(f -> f.createParser(r), null);
  }

  /**
   * The value of the top-level field {@code field} of the JSON object in the bytes, read as {@link #read} reads it
   * (objects and arrays too), or null when the document is not an object or has no such field. Reads only up to
   * the end of that field's value: nothing after it is looked at (so not checked), and a repeated field gives its
   * first value. Malformed text before the end of the value is a {@link MalformedJsonException}.
   */
  public Object readField(byte[] b, int off, int len, String field) {
    return run(f -> f.createParser(b, off, len), field);
  }

  /** {@link #readField(byte[], int, int, String)} of a String. */
  public Object readField(String s, String field) {
    return run(f -> f.createParser(s), field);
  }

  /** {@link #readField(byte[], int, int, String)} of a stream; closes the stream. */
  public Object readField(InputStream in, String field) {
    return run(f -> f.createParser(in), field);
  }

  /** {@link #readField(byte[], int, int, String)} of a Reader; closes the reader. */
  public Object readField(Reader r, String field) {
    return run(f -> f.createParser(r), field);
  }

  private Object run(Source source, String field) {
    try (JsonParser p = source.open(JsonFactories.forCurrentThread(factories))) {
      try {
        return field == null ? readRoot0(p) : readField0(p, field);
      } catch (IOException e) {
        throw translate(e, p);
      }
    } catch (IOException e) {
      throw translate(e, null);
    }
  }

  private Object readField0(JsonParser p, String field) throws IOException {
    JsonToken t = p.nextToken();
    if (t == null) throw new MalformedJsonException("no JSON value (empty input)", 1, 1, null);
    if (t != JsonToken.START_OBJECT) return null;
    String name;
    while ((name = p.nextFieldName()) != null) {
      JsonToken v = p.nextToken();
      if (field.equals(name)) return readValue(p, v);
      p.skipChildren();
    }
    return null;
  }

  private Object readRoot0(JsonParser p) throws IOException {
    JsonToken t = p.nextToken();
    if (t == null) throw new MalformedJsonException("no JSON value (empty input)", 1, 1, null);
    Object v = readValue(p, t);
    JsonToken extra = p.nextToken();
    if (extra != null) {
      var loc = p.currentTokenLocation();
      throw new MalformedJsonException("trailing content after the JSON value", loc.getLineNr(), loc.getColumnNr(), null);
    }
    return v;
  }

  private Object readValue(JsonParser p, JsonToken t) throws IOException {
    switch (t) {
      case START_OBJECT: return readObject(p);
      case START_ARRAY: return readArray(p);
      case VALUE_STRING: return p.getText();
      case VALUE_NUMBER_INT:
        return switch (p.getNumberType()) {
          case INT, LONG -> p.getLongValue();
          default -> BigInt.fromBigInteger(p.getBigIntegerValue());
        };
      case VALUE_NUMBER_FLOAT: {
        if (bigDecimals) {
          try {
            return p.getDecimalValue();
          } catch (NumberFormatException e) { // Jackson's own limit, e.g. an exponent past BigDecimal's int scale
            var loc = p.currentTokenLocation();
            throw new MalformedJsonException("number " + p.getText() + " cannot be read as a BigDecimal",
                loc.getLineNr(), loc.getColumnNr(), e);
          }
        }
        double d = p.getDoubleValue();
        if (Double.isInfinite(d)) {
          // 1e400 would read as Infinity, which no JSON can carry back out (JsonWriter refuses it)
          var loc = p.currentTokenLocation();
          throw new MalformedJsonException("number " + p.getText() + " is beyond the range of a double",
              loc.getLineNr(), loc.getColumnNr(), null);
        }
        return d;
      }
      case VALUE_TRUE: return Boolean.TRUE;
      case VALUE_FALSE: return Boolean.FALSE;
      case VALUE_NULL: return null;
      default: throw new MalformedJsonException("unexpected token " + t, p.currentLocation().getLineNr(),
          p.currentLocation().getColumnNr(), null);
    }
  }

  private Object readObject(JsonParser p) throws IOException {
    String name = p.nextFieldName();
    if (name == null) return PersistentArrayMap.EMPTY;
    if (rejectDuplicateKeys) return readObjectStrict(p, name);
    Object[] kv = new Object[8];
    int n = 0;
    do {
      Object k = key(name);
      Object v = readValue(p, p.nextToken());
      if (n == kv.length) kv = Arrays.copyOf(kv, n * 2);
      kv[n++] = k;
      kv[n++] = v;
    } while ((name = p.nextFieldName()) != null);
    if (n <= 16) {
      // an array map, built the way map literals are: a repeated key keeps its last value
      return PersistentArrayMap.createAsIfByAssoc(n == kv.length ? kv : Arrays.copyOf(kv, n));
    }
    ITransientMap m = PersistentHashMap.EMPTY.asTransient();
    for (int i = 0; i < n; i += 2) m = m.assoc(kv[i], kv[i + 1]);
    return m.persistent();
  }

  private Object readObjectStrict(JsonParser p, String first) throws IOException {
    ITransientMap m = PersistentArrayMap.EMPTY.asTransient();
    String name = first;
    do {
      Object k = key(name);
      Object v = readValue(p, p.nextToken());
      if (m.valAt(k, MISSING) != MISSING) {
        var loc = p.currentTokenLocation();
        throw new MalformedJsonException("duplicate key \"" + name + "\"", loc.getLineNr(), loc.getColumnNr(), null);
      }
      m = m.assoc(k, v);
    } while ((name = p.nextFieldName()) != null);
    return m.persistent();
  }

  private Object readArray(JsonParser p) throws IOException {
    JsonToken t = p.nextToken();
    if (t == JsonToken.END_ARRAY) return PersistentVector.EMPTY;
    Object[] items = new Object[8];
    int n = 0;
    do {
      if (n == items.length) items = Arrays.copyOf(items, n * 2);
      items[n++] = readValue(p, t);
    } while ((t = p.nextToken()) != JsonToken.END_ARRAY);
    return LazilyPersistentVector.createOwning(n == items.length ? items : Arrays.copyOf(items, n));
  }

  private Object key(String name) {
    return switch (keys) {
      case STRINGS -> name;
      case KEYWORDS -> keyword(name);
      case FN -> keyFn.invoke(name);
    };
  }

  /** Interns {@code name} as a keyword ("a/b" gives :a/b), through a bounded cache. */
  public static Keyword keyword(String name) {
    Keyword k = KEYWORDS.get(name);
    if (k != null) return k;
    k = Keyword.intern(name);
    if (KEYWORDS.size() < KEYWORD_CACHE_MAX) KEYWORDS.putIfAbsent(name, k);
    return k;
  }

  /** Jackson's message without source references and API names, for a client-facing error body. */
  static String clean(String m) {
    if (m == null) return "invalid JSON";
    return m.replaceAll("\\[Source: [^\\]]*?line: (\\d+), column: (\\d+)\\]", "line $1, column $2")
        .replaceAll(", from `[^`]*`", "")
        .replaceAll("\\s*\\(for `[^`]*`\\)", "");
  }

  static RuntimeException translate(IOException e, JsonParser p) {
    if (e instanceof JsonProcessingException jpe) {
      var loc = jpe.getLocation();
      if (loc == null && p != null) loc = p.currentLocation();
      return new MalformedJsonException(clean(jpe.getOriginalMessage()), loc == null ? -1 : loc.getLineNr(),
          loc == null ? -1 : loc.getColumnNr(), e);
    }
    if (e instanceof CharConversionException) return new MalformedJsonException(e.getMessage(), -1, -1, e);
    return new UncheckedIOException(e);
  }
}
