package herald.http.server;

import clojure.lang.Keyword;

/** Interned Ring keywords, created once. */
public final class RingKeys {
    private RingKeys() {}

    public static final Keyword SERVER_PORT = Keyword.intern("server-port");
    public static final Keyword SERVER_NAME = Keyword.intern("server-name");
    public static final Keyword REMOTE_ADDR = Keyword.intern("remote-addr");
    public static final Keyword URI = Keyword.intern("uri");
    public static final Keyword QUERY_STRING = Keyword.intern("query-string");
    public static final Keyword SCHEME = Keyword.intern("scheme");
    public static final Keyword REQUEST_METHOD = Keyword.intern("request-method");
    public static final Keyword PROTOCOL = Keyword.intern("protocol");
    public static final Keyword HEADERS = Keyword.intern("headers");
    public static final Keyword BODY = Keyword.intern("body");
    public static final Keyword SSL_CLIENT_CERT = Keyword.intern("ssl-client-cert");
    public static final Keyword STATUS = Keyword.intern("status");
    public static final Keyword HTTP = Keyword.intern("http");
    public static final Keyword HTTPS = Keyword.intern("https");
    public static final Keyword WS_LISTENER = Keyword.intern("ring.websocket", "listener");
    public static final Keyword WS_PROTOCOL = Keyword.intern("ring.websocket", "protocol");

    public static final Keyword GET = Keyword.intern("get");
    public static final Keyword POST = Keyword.intern("post");
    public static final Keyword PUT = Keyword.intern("put");
    public static final Keyword DELETE = Keyword.intern("delete");
    public static final Keyword HEAD = Keyword.intern("head");
    public static final Keyword OPTIONS = Keyword.intern("options");
    public static final Keyword PATCH = Keyword.intern("patch");
    public static final Keyword TRACE = Keyword.intern("trace");
    public static final Keyword CONNECT = Keyword.intern("connect");
}
