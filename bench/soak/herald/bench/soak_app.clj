(ns herald.bench.soak-app
  "The server of bench/soak.sh: herald.http with plaintext, digested uploads, streamed downloads, WebSocket echo
  and a /stats endpoint reporting heap and direct memory."
  (:require [clojure.string :as str]
            [herald.http :as http])
  (:import (io.netty.buffer ByteBufAllocator ByteBufAllocatorMetricProvider)
           (io.netty.util.internal PlatformDependent)
           (java.io InputStream)
           (java.lang.management BufferPoolMXBean ManagementFactory MemoryMXBean)
           (java.security MessageDigest)
           (java.util HexFormat)))

(set! *warn-on-reflection* true)

(def ^:private text {"Content-Type" "text/plain"})

(defn- digest-body
  "Reads the InputStream `in` to its end in 64 KiB reads: [byte count, SHA-256 hex]."
  [^InputStream in]
  (let [md (MessageDigest/getInstance "SHA-256")
        buf (byte-array 65536)]
    (loop [n 0]
      (let [r (.read in buf)]
        (if (neg? r)
          [n (.formatHex (HexFormat/of) (.digest md))]
          (do (.update md buf 0 r) (recur (+ n r))))))))

(defn- upload
  "POST /upload: the body is read as it arrives and thrown away; answers `<bytes> <sha256-hex>`."
  [request]
  (let [[n hex] (if-let [in (:body request)] (with-open [^InputStream in in] (digest-body in)) [0 nil])]
    {:status 200 :headers text :body (str n " " hex)}))

(defn pattern-byte
  "The byte at position `i` of every streamed response (the clients check it): a 251-periodic ramp."
  ^long [^long i]
  (rem i 251))

(defn- pattern-stream
  "An InputStream of `n` bytes of `pattern-byte`, produced as it is read (nothing buffered up front)."
  ^InputStream [^long n]
  (let [pos (long-array 1)]
    (proxy [InputStream] []
      (read
        ([] (let [p (aget pos 0)]
              (if (>= p n) -1 (do (aset pos 0 (inc p)) (pattern-byte p)))))
        ([^bytes b] (.read ^InputStream this b 0 (alength b)))
        ([^bytes b off len]
         (let [p (aget pos 0) k (min (long len) (- n p))]
           (if (<= k 0)
             -1
             (do (dotimes [j k] (aset b (+ (long off) j) (unchecked-byte (pattern-byte (+ p j)))))
                 (aset pos 0 (+ p k))
                 k))))))))

(defn- query-long
  "The long value of `k=` in the query string, or `default`."
  [request k default]
  (or (some->> (:query-string request) (re-find (re-pattern (str "(?:^|&)" k "=(\\d+)"))) second parse-long)
      default))

(defn- stream
  "GET /stream?kb=N: N KiB (default 4096) of the pattern, streamed chunked."
  [request]
  {:status 200 :headers {"Content-Type" "application/octet-stream"}
   :body (pattern-stream (* 1024 (long (query-long request "kb" 4096))))})

(def ^:private echo-listener
  {:on-message (fn [socket message] (http/ws-send socket message))})

(defn- mb ^double [^long bytes] (/ bytes 1048576.0))

(defn- direct-pool
  "The JDK's \"direct\" buffer pool: [count, bytes used]."
  []
  (let [^BufferPoolMXBean p (->> (ManagementFactory/getPlatformMXBeans BufferPoolMXBean)
                                 (filter #(= "direct" (.getName ^BufferPoolMXBean %))) first)]
    [(.getCount p) (.getMemoryUsed p)]))

(defn- allocator-direct
  "Direct bytes Netty's default allocator holds (its arenas or chunks), or -1 when it does not say."
  ^long []
  (let [a ByteBufAllocator/DEFAULT]
    (if (instance? ByteBufAllocatorMetricProvider a)
      (.usedDirectMemory (.metric ^ByteBufAllocatorMetricProvider a))
      -1)))

(defn stats-line
  "One line of `key=value` figures: heap, direct memory (JDK pool, Netty's counter, Netty's allocator),
  threads and the server's own counters."
  [server]
  (let [^MemoryMXBean m (ManagementFactory/getMemoryMXBean)
        heap (.getHeapMemoryUsage m)
        [n-direct direct] (direct-pool)
        s (http/server-stats server)]
    (format (str "heap_used_mb=%.1f heap_committed_mb=%.1f direct_pool_mb=%.1f direct_buffers=%d"
                 " netty_direct_mb=%.1f allocator_direct_mb=%.1f allocator=%s threads=%d connections=%d"
                 " server_errors=%s")
            (mb (.getUsed heap)) (mb (.getCommitted heap)) (mb direct) n-direct
            (mb (PlatformDependent/usedDirectMemory)) (mb (allocator-direct))
            (.getSimpleName (class ByteBufAllocator/DEFAULT))
            (.getThreadCount (ManagementFactory/getThreadMXBean)) (:connections s)
            (str/replace (pr-str (:errors s)) " " ""))))

(defn handler
  "The soak's Ring handler (`server` is a promise of the running server, for /stats)."
  [server]
  (fn [request]
    (case [(:request-method request) (:uri request)]
      [:get "/plaintext"] {:status 200 :headers text :body "Hello, World!"}
      [:post "/upload"] (upload request)
      [:get "/stream"] (stream request)
      [:get "/ws"] {:ring.websocket/listener echo-listener}
      [:get "/stats"] {:status 200 :headers text :body (stats-line @server)}
      {:status 404 :headers text :body "Not Found"})))

(defn- leak-probe!
  "Drops a direct buffer without releasing it and forces its collection, so that a leak detector at PARANOID
  reports one leak: proof that the script's leak count sees reports (--leak-probe true)."
  []
  (let [buf (.directBuffer ByteBufAllocator/DEFAULT 1024)]
    (.writeLong buf 42))
  (dotimes [_ 5]
    (System/gc)
    (Thread/sleep 100)
    ;; the detector reports on allocations after the buffer was collected
    (.release (.directBuffer ByteBufAllocator/DEFAULT 1024))))

(defn -main
  "Starts the soak server on 127.0.0.1 (--port N, default 0; --mode, default virtual-threads; --max-body-mb,
  default 64; --leak-probe true leaks one buffer on purpose), prints READY <port> and serves until stopped."
  [& args]
  (let [opts (apply hash-map args)
        server (promise)
        s (http/start-server (handler server)
                             {:host "127.0.0.1"
                              :port (parse-long (get opts "--port" "0"))
                              :mode (keyword (get opts "--mode" "virtual-threads"))
                              :max-body-bytes (* 1048576 (parse-long (get opts "--max-body-mb" "64")))})]
    (deliver server s)
    (.addShutdownHook (Runtime/getRuntime) (Thread. ^Runnable (fn [] (deref (http/stop-server s) 5000 nil))))
    (when (= "true" (get opts "--leak-probe")) (leak-probe!))
    (println "READY" (http/server-port s))
    (flush)
    @(promise)))
