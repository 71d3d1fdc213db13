package herald.http.server;

import static herald.http.server.RingKeys.*;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import java.security.cert.X509Certificate;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** Builds the Ring request map straight from a {@link RequestHead}, with interned keywords. */
public final class RingRequest {
    private static final Map<String, String> LOWER = new HashMap<>();

    static {
        for (String h : new String[] {"Host", "User-Agent", "Accept", "Accept-Encoding", "Accept-Language",
            "Accept-Charset", "Connection", "Content-Type", "Content-Length", "Cookie", "Cache-Control",
            "Upgrade", "Origin", "Referer", "Authorization", "Pragma", "If-None-Match", "If-Modified-Since",
            "Transfer-Encoding", "Expect", "X-Forwarded-For", "X-Forwarded-Proto", "X-Requested-With",
            "Sec-WebSocket-Key", "Sec-WebSocket-Version", "Sec-WebSocket-Extensions", "Sec-WebSocket-Protocol",
            "Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-Dest", "Upgrade-Insecure-Requests", "DNT", "TE"}) {
            LOWER.put(h, h.toLowerCase(Locale.ROOT));
        }
    }

    private RingRequest() {}

    /**
     * The Ring map of {@code req}, a head that arrived on a connection ({@link RequestHead#arrivedOn}); {@code body}
     * is null when the request has none (then :body is absent). Every value comes from the head, whichever codec
     * made it: the HTTP/1.1 head's path, query and headers are still the bytes it was parsed from.
     */
    public static IPersistentMap build(RequestHead req, InputStream body) {
        String query = req.query();
        X509Certificate cert = req.clientCert();
        HttpHeaders hs = req.headers();
        Object[] kv = new Object[16 + (query != null ? 2 : 0) + (body != null ? 2 : 0) + (cert != null ? 2 : 0)];
        int i = 0;
        kv[i++] = SERVER_PORT;
        kv[i++] = req.serverPort();
        kv[i++] = SERVER_NAME;
        kv[i++] = req.serverName();
        kv[i++] = REMOTE_ADDR;
        kv[i++] = req.remoteAddr();
        kv[i++] = URI;
        kv[i++] = req.path();
        if (query != null) {
            kv[i++] = QUERY_STRING;
            kv[i++] = query;
        }
        kv[i++] = SCHEME;
        kv[i++] = req.https() ? HTTPS : HTTP;
        kv[i++] = REQUEST_METHOD;
        kv[i++] = method(req.method());
        kv[i++] = PROTOCOL;
        kv[i++] = req.version().text();
        kv[i++] = HEADERS;
        kv[i++] = hs.isEmpty() ? PersistentArrayMap.EMPTY : new LazyHeaders(hs);
        return finish(kv, i, body, cert);
    }

    /** The optional :body and :ssl-client-cert after the keys both builds set, then the map. */
    private static IPersistentMap finish(Object[] kv, int i, InputStream body, X509Certificate cert) {
        if (body != null) {
            kv[i++] = BODY;
            kv[i++] = body;
        }
        if (cert != null) {
            kv[i++] = SSL_CLIENT_CERT;
            kv[i++] = cert;
        }
        return new PersistentArrayMap(kv);
    }

    /** The lowercase keyword of a method: the standard ones are constants. */
    public static Keyword method(HttpMethod m) {
        if (m == HttpMethod.GET) return GET;
        if (m == HttpMethod.POST) return POST;
        if (m == HttpMethod.PUT) return PUT;
        if (m == HttpMethod.DELETE) return DELETE;
        if (m == HttpMethod.HEAD) return HEAD;
        if (m == HttpMethod.OPTIONS) return OPTIONS;
        if (m == HttpMethod.PATCH) return PATCH;
        if (m == HttpMethod.TRACE) return TRACE;
        if (m == HttpMethod.CONNECT) return CONNECT;
        return Keyword.intern(m.name().toLowerCase(Locale.ROOT));
    }

    /** The lowercased, joined headers as a persistent map (array map up to 16 distinct names). */
    static IPersistentMap headersMap(HttpHeaders hs) {
        if (hs instanceof ParsedHeaders h && h.plain()) {
            return headersMap(h);
        }
        int n = hs.size();
        if (n > 16) {
            return largeHeaders(hs);
        }
        Object[] kv = new Object[n * 2];
        int len = 0;
        for (Iterator<Map.Entry<CharSequence, CharSequence>> it = hs.iteratorCharSequence(); it.hasNext(); ) {
            Map.Entry<CharSequence, CharSequence> e = it.next();
            len = putJoined(kv, len, lower(e.getKey()), e.getValue().toString());
        }
        return arrayMap(kv, len);
    }

    /** {@link #headersMap} of parsed headers: the names are lower-case already. */
    private static IPersistentMap headersMap(ParsedHeaders hs) {
        int n = hs.count();
        if (n > 16) {
            LinkedHashMap<String, String> m = new LinkedHashMap<>();
            for (int k = 0; k < n; k++) {
                String name = hs.name(k);
                String prev = m.get(name);
                m.put(name, prev == null ? hs.value(k) : join(name, prev, hs.value(k)));
            }
            return PersistentHashMap.create(m);
        }
        Object[] kv = new Object[n * 2];
        int len = 0;
        for (int k = 0; k < n; k++) {
            len = putJoined(kv, len, hs.name(k), hs.value(k));
        }
        return arrayMap(kv, len);
    }

    /** Adds name/value to the pairs kv[0, len), joining the values of a repeated name; returns the new length. */
    private static int putJoined(Object[] kv, int len, String name, String value) {
        for (int j = 0; j < len; j += 2) {
            if (kv[j].equals(name)) {
                kv[j + 1] = join(name, (String) kv[j + 1], value);
                return len;
            }
        }
        kv[len] = name;
        kv[len + 1] = value;
        return len + 2;
    }

    /** The array map of the pairs kv[0, len). */
    private static IPersistentMap arrayMap(Object[] kv, int len) {
        return len == 0 ? PersistentArrayMap.EMPTY
            : new PersistentArrayMap(len == kv.length ? kv : java.util.Arrays.copyOf(kv, len));
    }

    private static IPersistentMap largeHeaders(HttpHeaders hs) {
        LinkedHashMap<String, String> m = new LinkedHashMap<>();
        for (Iterator<Map.Entry<CharSequence, CharSequence>> it = hs.iteratorCharSequence(); it.hasNext(); ) {
            Map.Entry<CharSequence, CharSequence> e = it.next();
            String name = lower(e.getKey());
            String value = e.getValue().toString();
            String prev = m.get(name);
            m.put(name, prev == null ? value : join(name, prev, value));
        }
        return PersistentHashMap.create(m);
    }

    private static String join(String name, String prev, String value) {
        return prev + ("cookie".equals(name) ? "; " : ",") + value;
    }

    static String lower(CharSequence key) {
        String s = key.toString();
        String l = LOWER.get(s);
        return l != null ? l : s.toLowerCase(Locale.ROOT);
    }
}
