package herald.http.server;

import static herald.http.server.RingKeys.*;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.channel.Channel;
import io.netty.handler.ssl.SslHandler;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** Builds the Ring request map straight from Netty's request head, with interned keywords. */
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

    private static final Object NO_CERT = new Object();
    private static final AsciiString X_FORWARDED_FOR = AsciiString.cached("x-forwarded-for");
    private static final AsciiString X_FORWARDED_PROTO = AsciiString.cached("x-forwarded-proto");

    private RingRequest() {}

    /** Per-connection facts, computed once per channel. */
    public static final class Connection {
        /** {@code :remote-addr} of a request over a Unix domain socket (the peer is on this host). */
        public static final String UNIX_REMOTE_ADDR = "127.0.0.1";
        /** {@code :server-name} of a request over a Unix domain socket that has no Host header. */
        public static final String UNIX_SERVER_NAME = "localhost";
        /** {@code :server-port} of a request over a Unix domain socket: the http scheme's default port. */
        public static final int UNIX_SERVER_PORT = 80;

        private static boolean isUnix(SocketAddress a) {
            return a instanceof java.net.UnixDomainSocketAddress || a instanceof io.netty.channel.unix.DomainSocketAddress;
        }

        final Integer serverPort;
        final String remoteAddr;
        final String localAddr;
        final boolean proxy;
        /** The channel's TLS handler; null on a plaintext connection. */
        final SslHandler tls;
        /** The client certificate once read: NO_CERT when there is none; null until read. */
        private volatile Object clientCert;

        /**
         * The facts of {@code ch}; {@code fallbackPort} when its local address is not an inet address. A Unix domain
         * socket connection has no addresses: it gets {@link #UNIX_REMOTE_ADDR}, {@link #UNIX_SERVER_NAME} (when the
         * request has no Host) and {@link #UNIX_SERVER_PORT}, what a client on this host going through TCP would get.
         */
        static Connection of(Channel ch, int fallbackPort, boolean proxy) {
            SocketAddress local = ch.localAddress();
            if (isUnix(local)) {
                return new Connection(UNIX_SERVER_PORT, UNIX_REMOTE_ADDR, UNIX_SERVER_NAME, proxy,
                    ch.pipeline().get(SslHandler.class));
            }
            int port = local instanceof InetSocketAddress isa ? isa.getPort() : fallbackPort;
            return new Connection(port, ip(ch.remoteAddress()), ip(local), proxy, ch.pipeline().get(SslHandler.class));
        }

        /**
         * The client's certificate (the leaf of the chain it presented), or null; read once from the TLS session,
         * which is established before any request on the connection is decoded.
         */
        X509Certificate clientCert() {
            Object c = clientCert;
            if (c == null) {
                X509Certificate leaf = peerLeaf(tls.engine().getSession());
                c = leaf != null ? leaf : NO_CERT;
                clientCert = c;
            }
            return c instanceof X509Certificate x ? x : null;
        }

        private static X509Certificate peerLeaf(SSLSession session) {
            try {
                Certificate[] chain = session.getPeerCertificates();
                return chain.length > 0 && chain[0] instanceof X509Certificate x ? x : null;
            } catch (SSLPeerUnverifiedException none) {
                return null;
            }
        }

        private static String ip(SocketAddress a) {
            if (a instanceof InetSocketAddress isa) {
                return isa.getAddress() != null ? isa.getAddress().getHostAddress() : isa.getHostString();
            }
            return a == null ? "" : a.toString();
        }

        public Connection(int serverPort, String remoteAddr, String localAddr, boolean proxy) {
            this(serverPort, remoteAddr, localAddr, proxy, null);
        }

        Connection(int serverPort, String remoteAddr, String localAddr, boolean proxy, SslHandler tls) {
            this.serverPort = serverPort;
            this.remoteAddr = remoteAddr;
            this.localAddr = localAddr;
            this.proxy = proxy;
            this.tls = tls;
        }
    }

    /** The Ring map of {@code req}; {@code body} is null when the request has none (then :body is absent). */
    public static IPersistentMap build(HttpRequest req, InputStream body, Connection conn) {
        if (req instanceof Http1Request h && !h.absolute && h.headers instanceof Http1Headers hh && hh.plain()) {
            return build(h, hh, body, conn);
        }
        HttpHeaders hs = req.headers();
        String host = hs.get(HttpHeaderNames.HOST);
        String forwardedFor = conn.proxy ? hs.get(X_FORWARDED_FOR) : null;
        String raw = req.uri();
        int start = pathStart(raw);
        int q = raw.indexOf('?', start);
        X509Certificate cert = conn.tls != null ? conn.clientCert() : null;
        Object[] kv = new Object[16 + (q >= 0 ? 2 : 0) + (body != null ? 2 : 0) + (cert != null ? 2 : 0)];
        int i = 0;
        kv[i++] = SERVER_PORT;
        kv[i++] = conn.serverPort;
        kv[i++] = SERVER_NAME;
        kv[i++] = serverName(host, conn);
        kv[i++] = REMOTE_ADDR;
        kv[i++] = forwardedFor != null ? firstForwarded(forwardedFor) : conn.remoteAddr;
        kv[i++] = URI;
        kv[i++] = q < 0 ? (start == 0 ? raw : nonEmptyPath(raw.substring(start))) : nonEmptyPath(raw.substring(start, q));
        if (q >= 0) {
            kv[i++] = QUERY_STRING;
            kv[i++] = raw.substring(q + 1);
        }
        kv[i++] = SCHEME;
        kv[i++] = conn.tls != null || conn.proxy && "https".equalsIgnoreCase(hs.get(X_FORWARDED_PROTO)) ? HTTPS : HTTP;
        kv[i++] = REQUEST_METHOD;
        kv[i++] = method(req.method());
        kv[i++] = PROTOCOL;
        kv[i++] = req.protocolVersion().text();
        kv[i++] = HEADERS;
        kv[i++] = hs.isEmpty() ? PersistentArrayMap.EMPTY : new LazyHeaders(hs);
        return finish(kv, i, body, cert);
    }

    /** {@link #build} for a head herald's parser made: path, query and server name straight from it. */
    private static IPersistentMap build(Http1Request req, Http1Headers hs, InputStream body, Connection conn) {
        String forwardedFor = conn.proxy ? hs.get(X_FORWARDED_FOR) : null;
        int q = req.queryAt;
        X509Certificate cert = conn.tls != null ? conn.clientCert() : null;
        Object[] kv = new Object[16 + (q >= 0 ? 2 : 0) + (body != null ? 2 : 0) + (cert != null ? 2 : 0)];
        int i = 0;
        kv[i++] = SERVER_PORT;
        kv[i++] = conn.serverPort;
        kv[i++] = SERVER_NAME;
        String name = req.serverName;
        kv[i++] = name == null || name.isEmpty() ? conn.localAddr : name;
        kv[i++] = REMOTE_ADDR;
        kv[i++] = forwardedFor != null ? firstForwarded(forwardedFor) : conn.remoteAddr;
        kv[i++] = URI;
        kv[i++] = req.path();
        if (q >= 0) {
            kv[i++] = QUERY_STRING;
            kv[i++] = req.query();
        }
        kv[i++] = SCHEME;
        kv[i++] = conn.tls != null || conn.proxy && "https".equalsIgnoreCase(hs.get(X_FORWARDED_PROTO)) ? HTTPS : HTTP;
        kv[i++] = REQUEST_METHOD;
        kv[i++] = method(req.method());
        kv[i++] = PROTOCOL;
        kv[i++] = req.protocolVersion().text();
        kv[i++] = HEADERS;
        kv[i++] = hs.count() == 0 ? PersistentArrayMap.EMPTY : new LazyHeaders(hs);
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

    /** Index where the path starts: 0 for origin-form, after the authority for absolute-form. */
    static int pathStart(String raw) {
        if (raw.isEmpty() || raw.charAt(0) == '/' || raw.charAt(0) == '*') {
            return 0;
        }
        int scheme = raw.indexOf("://");
        if (scheme < 0) {
            return 0;
        }
        int slash = raw.indexOf('/', scheme + 3);
        int q = raw.indexOf('?', scheme + 3);
        if (slash < 0 || (q >= 0 && q < slash)) {
            return q >= 0 ? q : raw.length();
        }
        return slash;
    }

    private static String nonEmptyPath(String p) {
        return p.isEmpty() ? "/" : p;
    }

    private static String serverName(String host, Connection conn) {
        if (host == null || host.isEmpty()) {
            return conn.localAddr;
        }
        String name;
        if (host.charAt(0) == '[') {
            int close = host.indexOf(']');
            name = close > 0 ? host.substring(0, close + 1) : host;
        } else {
            int colon = host.lastIndexOf(':');
            name = colon >= 0 ? host.substring(0, colon) : host;
        }
        return name;
    }

    private static String firstForwarded(String xff) {
        int comma = xff.indexOf(',');
        return (comma < 0 ? xff : xff.substring(0, comma)).trim();
    }

    /** The lowercased, joined headers as a persistent map (array map up to 16 distinct names). */
    static IPersistentMap headersMap(HttpHeaders hs) {
        if (hs instanceof Http1Headers h && h.plain()) {
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
    private static IPersistentMap headersMap(Http1Headers hs) {
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
