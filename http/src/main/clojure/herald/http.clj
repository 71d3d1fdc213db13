(ns herald.http
  "herald's HTTP server: a strictly Ring 1.x compliant server on Netty, WebSockets, static files. Routing, OpenAPI and
  middleware are herald.http.router, herald.http.openapi and herald.http.middleware (JSON data: herald.json)."
  (:require [herald.http.impl.file-sources :as file-sources]
            [herald.http.impl.files :as files]
            [herald.http.impl.response :as response]
            [herald.http.impl.server :as server])
  (:import (herald.http.server HeraldServer)
           (herald.http.websocket HeraldWebSocket)))

(set! *warn-on-reflection* true)

(defn start-server
  "Starts serving the Ring `handler` and returns the server (a java.io.Closeable); see `server-port` and
  `stop-server`. Returns once the port is bound.

  `handler` is a Ring 1-arity handler `(fn [request] response)`, or with `:async? true` a 3-arity handler
  `(fn [request respond raise])`. A response carrying `:ring.websocket/listener` upgrades to a WebSocket.

  With `:tls` or `:ssl-context` the port serves only TLS: requests carry `:scheme :https`, and
  `:ssl-client-cert` (the client's X509Certificate) when the client presented one. To serve both http and https,
  start two servers.

  | key | type | default | meaning |
  |-----|------|---------|---------|
  | `:port` | int 0-65535 | `8080` | port to listen on; `0` picks a free port |
  | `:host` | String | `\"0.0.0.0\"` | address to bind |
  | `:mode` | keyword | `:virtual-threads` | where 1-arity handlers run: `:virtual-threads` (a blocked handler holds up no other), `:worker-pool` (bounded platform threads), `:event-loop` (on Netty's I/O thread: only for handlers that never block) |
  | `:async?` | boolean | `false` | the handler is 3-arity `(fn [req respond raise])`; it is called per `:mode` and may answer from any thread |
  | `:worker-threads` | int | `max(16, 8 x cores)` | threads of the `:worker-pool` mode |
  | `:max-pending` | int | `10000` | requests waiting for or running in a handler; above it the server answers 503 (with `Retry-After: 1`) at once |
  | `:max-body-bytes` | int | `4194304` (4 MiB) | larger request bodies get 413 before the handler runs |
  | `:max-header-bytes` | int | `8192` | larger request headers get 431 |
  | `:max-request-line-bytes` | int | `4096` | longer request lines get 414 |
  | `:idle-timeout-ms` | int | `60000` | a keep-alive connection with nothing in flight and no bytes read for this long is closed (`0`: never); an in-flight request is never cut (a client that reads none of its queued responses is not in flight) |
  | `:request-timeout-ms` | int | `30000` | a request whose head and body are not received within this time gets 408 and the connection is closed (`0`: never) |
  | `:max-connections` | int | `10000` | connections beyond this get 503 and are closed |
  | `:reserved-connections` | int | `0` | connections accepted beyond `:max-connections` for health probes only: a GET/HEAD of one of `:health-paths` is answered (then closed), any other request gets 503 and the connection closes |
  | `:health-paths` | collection of String | `#{\"/health\"}` | the paths (query ignored) a reserve connection answers |
  | `:max-connections-per-address` | int | `1000` | connections from one client IP address at once; a new one beyond it gets 503 and is closed, so one client cannot hold every connection (raise it behind a proxy, whose address all clients share) |
  | `:header-timeout-ms` | int | `10000` | a new connection that has not sent a complete request head this long after it opened (after its first bytes on plaintext with HTTP/2 on) is closed, with 408 when part of a head arrived (`0`: never; later requests are bounded by `:idle-timeout-ms` and `:request-timeout-ms`) |
  | `:shutdown-timeout-ms` | int | `10000` | how long `stop-server` waits for in-flight requests |
  | `:io-threads` | int | cores | Netty event loop threads |
  | `:transport` | keyword | `:auto` | `:auto` (epoll when available, else kqueue when available, else NIO), `:epoll`, `:kqueue` (macOS/BSD, needs `io.netty/netty-transport-native-kqueue` on the classpath), `:nio` |
  | `:unix-socket` | String, File, Path or nil | nil (none) | also serve on this Unix domain socket (HTTP/1.1 and h2c); with `:unix-socket` and no `:port`, serve only on the socket (`server-port` is then -1). A stale socket file is replaced; a live one or a file that is not a socket throws ex-info `{:type :herald.http/unix-socket-in-use :path p :live? b}`; the file is removed on stop. Requests over it carry `:remote-addr \"127.0.0.1\"`, `:server-port 80` and `:server-name` from `Host` (else `\"localhost\"`) (docs/http.md, Unix domain sockets) |
  | `:unix-socket-permissions` | String or nil | nil: the umask's | the socket file's mode as `\"rw-rw----\"`, set right after the bind |
  | `:server-header` | String or nil | `\"herald\"` | the `Server` header value; `nil` sends none (a handler's own `Server` header wins) |
  | `:proxy?` | boolean | `false` | trust `X-Forwarded-For` (first address -> `:remote-addr`) and `X-Forwarded-Proto` (-> `:scheme`) |
  | `:error-logger` | fn | logs to java.util.logging | `(fn [throwable request])`, called for each handler failure (the client gets a 500 with no stack trace) |
  | `:error-response` | fn | none: plain text | `(fn [status info])` returning the Ring response for an answer herald makes itself: a request refused before its handler (400, 408, 413, 414, 417, 431, 501, 505; the connection closes after it), 503 at `:max-pending` or `:max-connections`, 500 for a failed handler; `info` is `{:reason keyword :message String}`, e.g. `{:reason :body-too-large ...}`; it runs on the event loop and must not block; when it throws or returns no response map the default text answer is sent (docs/http.md, Error answers) |
  | `:websocket-max-frame-bytes` | int | `1048576` | largest WebSocket message (frames aggregated; after decompression with permessage-deflate); larger ones close with 1009 |
  | `:websocket-close-wait-ms` | int | `1000` | how long a close the server starts (`ws-close`, `stop-server`) waits for the client's close frame before it closes the connection anyway |
  | `:websocket-compression?` | boolean | `false` | accept permessage-deflate (RFC 7692) when a client offers it: messages both ways are deflated (RSV1); off by default because each compressed socket holds about 300 KB of zlib state and costs CPU per message (docs/http.md, WebSocket compression) |
  | `:max-pipelined` | int | `16` | pipelined requests buffered per connection before the server stops reading it |
  | `:max-write-buffer-bytes` | int | `65536` | response bytes queued for one connection (a client that does not read) above which the server stops reading its requests and starting its next pipelined one, until they drain below half |
  | `:tls` | map | none | serve HTTPS on `:port` from PEM files: `{:cert-chain-file :private-key-file}` (String or File; PKCS#8 key), optional `:private-key-password`, `:client-auth` (`:none` default, `:optional`, `:require`) and `:trust-cert-file` (PEM CAs client certificates are checked against) |
  | `:ssl-context` | SSLContext or SslContext | none | serve HTTPS on `:port` with a `javax.net.ssl.SSLContext` or a server-side Netty `SslContext` (JDK provider works; no tcnative needed); not together with `:tls` |
  | `:http2?` | boolean | `true` | serve HTTP/2 on the same port as well: h2 by ALPN with `:tls`/`:ssl-context` (clients that do not offer h2 get HTTP/1.1), h2c by prior knowledge or `Upgrade: h2c` on plaintext; requests carry `:protocol \"HTTP/2.0\"` (docs/http.md, HTTP/2) |
  | `:http2-max-concurrent-streams` | int | `128` | streams one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); `:max-pending` still bounds handlers server-wide |
  | `:access-log` | map or nil | nil (off) | one line per answer: `{:format (:common, :combined or :json) :to (:slf4j, a file path, or (fn [line])) :logger \"herald.http.access\" :queue-size 65536}`, written by a background thread (docs/http.md, Access log) |

  An unknown key or an invalid value throws ex-info `{:type :herald.http/invalid-option :key k :value v}`."
  ^HeraldServer [handler opts]
  (server/start handler opts))

(defn stop-server
  "Stops `server` gracefully: stops accepting, lets in-flight requests finish (up to `:shutdown-timeout-ms`),
  sends WebSockets a 1001 close (their listeners' `:on-close` get 1001), closes every connection and releases the
  port. Returns a derefable (a CompletableFuture) that completes when all of that is done, on-close callbacks
  included. Idempotent: later calls return the same value."
  [^HeraldServer server]
  (.stop server))

(defn server-port
  "The port `server` listens on (the real one when started with `:port 0`); -1 when it serves only a Unix socket."
  ^long [^HeraldServer server]
  (.port server))

(defn server-stats
  "A snapshot of `server`'s load, cheap enough to poll every second:

  | key | meaning |
  |-----|---------|
  | `:connections` | open connections |
  | `:pending` | handler invocations waiting for or running on a thread (the figure `:max-pending` bounds) |
  | `:queue-depth` | requests waiting for a handler thread right now (handed off, handler not started) |
  | `:handlers-started` | handlers started off the event loop since the server started |
  | `:queue-wait-ms-total` | the time those requests waited for their thread, summed (ms, a double) |
  | `:queue-wait-ms-max` | the longest such wait since the server started (ms) |
  | `:rejected` | requests answered 503 because `:max-pending` handlers were pending |
  | `:errors` | error answers herald wrote itself since it started (not the handler's), as a map of status to count, e.g. `{413 2, 503 7}`: 400/408/413/414/417/431/501/505 for requests refused before the handler, 503 at `:max-pending` or `:max-connections`, 500 for a handler that failed or returned no valid response; counted by the status herald chose, also when `:error-response` answered; `{}` when none |
  | `:transport` | `\"epoll\"`, `\"kqueue\"` or `\"nio\"` |
  | `:access-log` | only with `:access-log` on: `{:written n :dropped n}`, lines written and dropped (queue full) |

  The mean queue wait over an interval is the change of `:queue-wait-ms-total` divided by the change of
  `:handlers-started` between two snapshots. With `:mode :event-loop` handlers run inline, with no queue: every
  figure but `:connections` and `:transport` stays 0."
  [^HeraldServer server]
  (server/stats server))

(def StreamableResponseBody
  "The protocol herald uses for response body types beyond String, byte[], ISeq, File, InputStream and nil.
  Extend it with `(extend-protocol herald.http/StreamableResponseBody MyType (write-body-to-stream [body response
  out] ...))`: write the body to the OutputStream `out` and close it (the response ends on close, which may come
  later from another thread, e.g. for server-sent events; each `.flush` sends a chunk). Bodies implementing Ring's
  own `ring.core.protocols/StreamableResponseBody` are honoured too."
  response/StreamableResponseBody)

(def write-body-to-stream
  "The method of `StreamableResponseBody`: `(write-body-to-stream body response output-stream)`."
  response/write-body-to-stream)

(defn ws-send
  "Sends a WebSocket message: a String as a text frame, a byte[] or ByteBuffer as a binary frame. Waits while the
  connection is not writable (backpressure). Throws IllegalStateException when the socket is closed."
  [^HeraldWebSocket socket message]
  (.send socket message))

(defn ws-ping
  "Sends a ping (optional payload: byte[], ByteBuffer or String, at most 125 bytes; a longer one throws
  IllegalArgumentException and the socket stays usable)."
  ([^HeraldWebSocket socket] (.ping socket nil))
  ([^HeraldWebSocket socket data] (.ping socket data)))

(defn ws-pong
  "Sends an unsolicited pong (optional payload as for `ws-ping`)."
  ([^HeraldWebSocket socket] (.pong socket nil))
  ([^HeraldWebSocket socket data] (.pong socket data)))

(defn ws-close
  "Starts the close handshake (default code 1000); the listener's on-close follows. A code no close frame may
  carry (below 1000, 1004-1006, 1015, 1016-2999, 5000 and over) or a reason over 123 UTF-8 bytes throws
  IllegalArgumentException and the socket stays open."
  ([socket] (ws-close socket 1000 ""))
  ([^HeraldWebSocket socket code reason] (.close socket (int code) (str reason))))

(defn ws-open?
  "True while the socket is open (no close sent or received, connection up)."
  [^HeraldWebSocket socket]
  (.isOpen socket))

(def ^:private file-options #{:prefix :index-files :content-types :precompressed? :dotfiles? :follow-symlinks?
                              :cache-control})

(defn files
  "A Ring handler (1- and 3-arity) serving the files under directory `root` (String or File) for GET and HEAD:
  `:uri` minus `:prefix` names the file (percent-decoded per segment). Answers carry `ETag`, `Last-Modified`,
  `Accept-Ranges: bytes` and a Content-Type from the extension; `If-None-Match`/`If-Modified-Since` give 304;
  `Range` gives 206 (one range, or `multipart/byteranges` for several; `If-Range` honoured) or 416 with
  `Content-Range: bytes */length`; a `.br` or `.gz` sibling is sent instead when `Accept-Encoding` allows it
  (`Content-Encoding` and `Vary: Accept-Encoding` set). A path that is not a file under the root gets 404: `..`
  or `.` segments (also as `%2e%2e`), encoded `/` (`%2f`), backslashes, NUL and other control characters,
  dot-files, symlinks whose target is outside the root; other methods 405 (`Allow: GET, HEAD`); a directory
  without a trailing `/` a 301 to it. Files go out zero-copy on plaintext HTTP/1.1 (docs/http.md, Static files).

  | key | default | meaning |
  |-----|---------|---------|
  | `:prefix` | `\"\"` | the URI prefix the handler is mounted at (`\"/static\"`); other URIs get 404 |
  | `:index-files` | `[\"index.html\"]` | files served for a directory (URI ending in `/`), first found wins |
  | `:content-types` | `{}` | extension (no dot) -> Content-Type, merged over the built-in table |
  | `:precompressed?` | `true` | look for `.br`/`.gz` siblings |
  | `:dotfiles?` | `false` | serve names starting with `.` |
  | `:follow-symlinks?` | `false` | serve symlinks whose target is outside the root |
  | `:cache-control` | none | a `Cache-Control` value for every answer |

  A bad option or a root that is not a directory throws ex-info `{:type :herald.http/invalid-option}`."
  ([root] (files root {}))
  ([root opts]
   (let [opts (files/options "files" opts file-options)]
     (files/handler (file-sources/dir-source root (:follow-symlinks? opts)) opts))))

(defn resources
  "A Ring handler (1- and 3-arity) serving classpath resources under `prefix` (e.g. `\"public\"`) the way `files`
  serves a directory (same answers and options but `:follow-symlinks?`, plus `:loader`, the ClassLoader, by
  default the thread's context class loader when `resources` is called). Resources inside jars are read from the
  jar in place (nothing is extracted to disk) and streamed with their Content-Length; resources on a directory
  classpath entry are files (zero-copy)."
  ([prefix] (resources prefix {}))
  ([prefix opts]
   (let [opts (files/options "resources" opts (-> file-options (disj :follow-symlinks?) (conj :loader)))
         loader (or (:loader opts) (.getContextClassLoader (Thread/currentThread)))]
     (files/handler (file-sources/resource-source (str prefix) loader) opts))))
