package herald.http.http1;

import herald.http.server.ParsedHeaders;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The headers of a request head parsed by {@link Http1Parser}: lower-case names (one String each, shared constants
 * for the common ones) over the head's bytes, values made Strings only when read. Lookups, {@code size} and
 * {@code isEmpty} read the arrays; anything else (iteration, mutation: Netty's WebSocket handshake, the h2c upgrade,
 * absolute-form's Host) first copies the headers into a {@code DefaultHttpHeaders}, which serves every later call.
 */
final class Http1Headers extends ParsedHeaders {
    private static final DefaultHttpHeadersFactory PLAIN = DefaultHttpHeadersFactory.headersFactory()
        .withValidation(false);

    private final byte[] b;
    private final int n;
    /** Per header i: the value's start at 2i, its end at 2i+1 (OWS trimmed). */
    private final int[] pos;
    private final String[] names;
    private final String[] values;
    private HttpHeaders delegate;

    Http1Headers(byte[] b, int n, int[] pos, String[] names) {
        this.b = b;
        this.n = n;
        this.pos = pos;
        this.names = names;
        this.values = new String[n];
    }

    /** True until something needed the copy: the arrays are still what the request holds. */
    @Override
    public boolean plain() {
        return delegate == null;
    }

    @Override
    public int count() {
        return n;
    }

    @Override
    public String name(int i) {
        return names[i];
    }

    @Override
    public String value(int i) {
        String v = values[i];
        if (v == null) {
            int s = pos[2 * i];
            v = new String(b, s, pos[2 * i + 1] - s, StandardCharsets.ISO_8859_1);
            values[i] = v;
        }
        return v;
    }

    /** Sets the String of value {@code i} made elsewhere (the parser's per-connection Host cache). */
    void preset(int i, String v) {
        values[i] = v;
    }

    private int indexOf(CharSequence name) {
        for (int i = 0; i < n; i++) {
            String k = names[i];
            if (k.length() == name.length() && AsciiString.contentEqualsIgnoreCase(k, name)) {
                return i;
            }
        }
        return -1;
    }

    private HttpHeaders d() {
        HttpHeaders h = delegate;
        if (h == null) {
            h = PLAIN.newHeaders();
            for (int i = 0; i < n; i++) {
                h.add(names[i], value(i));
            }
            delegate = h;
        }
        return h;
    }

    @Override
    public String get(String name) {
        return get((CharSequence) name);
    }

    @Override
    public String get(CharSequence name) {
        if (delegate != null) {
            return delegate.get(name);
        }
        int i = indexOf(name);
        return i < 0 ? null : value(i);
    }

    @Override
    public List<String> getAll(String name) {
        return getAll((CharSequence) name);
    }

    @Override
    public List<String> getAll(CharSequence name) {
        if (delegate != null) {
            return delegate.getAll(name);
        }
        List<String> all = new ArrayList<>(2);
        for (int i = 0; i < n; i++) {
            String k = names[i];
            if (k.length() == name.length() && AsciiString.contentEqualsIgnoreCase(k, name)) {
                all.add(value(i));
            }
        }
        return all;
    }

    @Override
    public boolean contains(String name) {
        return contains((CharSequence) name);
    }

    @Override
    public boolean contains(CharSequence name) {
        return delegate != null ? delegate.contains(name) : indexOf(name) >= 0;
    }

    @Override
    public boolean isEmpty() {
        return delegate != null ? delegate.isEmpty() : n == 0;
    }

    @Override
    public int size() {
        return delegate != null ? delegate.size() : n;
    }

    @Override
    public Integer getInt(CharSequence name) {
        return d().getInt(name);
    }

    @Override
    public int getInt(CharSequence name, int defaultValue) {
        return d().getInt(name, defaultValue);
    }

    @Override
    public Short getShort(CharSequence name) {
        return d().getShort(name);
    }

    @Override
    public short getShort(CharSequence name, short defaultValue) {
        return d().getShort(name, defaultValue);
    }

    @Override
    public Long getTimeMillis(CharSequence name) {
        return d().getTimeMillis(name);
    }

    @Override
    public long getTimeMillis(CharSequence name, long defaultValue) {
        return d().getTimeMillis(name, defaultValue);
    }

    @Override
    public List<Map.Entry<String, String>> entries() {
        return d().entries();
    }

    @Override
    public Iterator<Map.Entry<String, String>> iterator() {
        return d().iterator();
    }

    @Override
    public Iterator<Map.Entry<CharSequence, CharSequence>> iteratorCharSequence() {
        return d().iteratorCharSequence();
    }

    @Override
    public Set<String> names() {
        return d().names();
    }

    @Override
    public HttpHeaders add(String name, Object value) {
        d().add(name, value);
        return this;
    }

    @Override
    public HttpHeaders add(String name, Iterable<?> values) {
        d().add(name, values);
        return this;
    }

    @Override
    public HttpHeaders addInt(CharSequence name, int value) {
        d().addInt(name, value);
        return this;
    }

    @Override
    public HttpHeaders addShort(CharSequence name, short value) {
        d().addShort(name, value);
        return this;
    }

    @Override
    public HttpHeaders set(String name, Object value) {
        d().set(name, value);
        return this;
    }

    @Override
    public HttpHeaders set(String name, Iterable<?> values) {
        d().set(name, values);
        return this;
    }

    @Override
    public HttpHeaders setInt(CharSequence name, int value) {
        d().setInt(name, value);
        return this;
    }

    @Override
    public HttpHeaders setShort(CharSequence name, short value) {
        d().setShort(name, value);
        return this;
    }

    @Override
    public HttpHeaders remove(String name) {
        d().remove(name);
        return this;
    }

    @Override
    public HttpHeaders clear() {
        d().clear();
        return this;
    }
}
