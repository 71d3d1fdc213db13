(ns herald.feed.dashboard-test
  "The live dashboard over real sockets: the page and its assets (content types, caching, 304, 404), the
  snapshot's figures after real requests, the WebSocket's messages, and the hub's bounds: at most
  :max-viewers, a browser that stops reading is closed without blocking anyone, a gone one leaves and the
  update thread stops with the last viewer."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.dashboard :as dash]
            [herald.feed.dashboard.live :as live]
            [herald.feed.fanout :as fanout]
            [herald.feed.jobs.perf :as jperf]
            [herald.feed.perf :as perf]
            [herald.feed.test-util :as tu]
            [herald.http :as http]
            [herald.json :as json])
  (:import (java.io InputStream OutputStream)
           (java.net Socket URI)
           (java.net.http HttpClient HttpRequest HttpResponse HttpResponse$BodyHandlers WebSocket WebSocket$Listener
                          WebSocketHandshakeException)
           (java.time Duration)
           (java.util.concurrent CompletableFuture LinkedBlockingQueue TimeUnit)))

(set! *warn-on-reflection* true)

(defn- get-raw
  "GET `url` with `headers`; {:status :headers (lower-case -> first value) :body string}."
  [url headers]
  (let [^java.net.http.HttpRequest$Builder b
        (reduce (fn [^java.net.http.HttpRequest$Builder b [k v]] (.header b k v))
                (HttpRequest/newBuilder (URI/create url)) headers)
        ^HttpResponse r (.send tu/client (.build b) (HttpResponse$BodyHandlers/ofString))]
    {:status (.statusCode r) :body (str (.body r))
     :headers (into {} (map (fn [[k v]] [(str/lower-case k) (first v)])) (.map (.headers r)))}))

(defn- ws-connect
  "Opens a WebSocket to `url`; returns {:ws WebSocket :messages queue of whole text messages} or throws."
  [url]
  (let [q (LinkedBlockingQueue.)
        buf (StringBuilder.)
        l (reify WebSocket$Listener
            (onText [_ ws data last?]
              (.append buf data)
              (when last? (.put q (str buf)) (.setLength buf 0))
              (.request ws 1)
              nil))
        ws (-> (.newWebSocketBuilder tu/client)
               (.connectTimeout (Duration/ofSeconds 5))
               (.buildAsync (URI/create url) l)
               (.get 10 TimeUnit/SECONDS))]
    {:ws ws :messages q}))

(defn- next-json [{:keys [^LinkedBlockingQueue messages]} ms]
  (some-> (.poll messages ms TimeUnit/MILLISECONDS) (json/read {:keywords? true})))

(defn- ws-url [base] (str (str/replace base #"^http" "ws") "/dashboard/live"))

(deftest page-and-assets
  (let [dir (tu/temp-dir "dash") sys (tu/start-feed! dir)]
    (try
      (let [base (feed/url sys)
            p (get-raw (str base "/dashboard") {})]
        (testing "the page: HTML, revalidated, no script from elsewhere"
          (is (= 200 (:status p)))
          (is (= "text/html; charset=utf-8" (get-in p [:headers "content-type"])))
          (is (= "no-cache" (get-in p [:headers "cache-control"])))
          (is (re-find #"default-src 'self'" (get-in p [:headers "content-security-policy"])))
          (is (not (re-find #"(?i)(src|href)=\"(https?:)?//" (:body p))) "no CDN: every URL is the feed's own")
          (is (= 304 (:status (get-raw (str base "/dashboard") {"If-None-Match" (get-in p [:headers "etag"])})))))
        (testing "each asset the page links: its content type, a year of caching at its hashed URL, revalidation without"
          (let [links (re-seq #"/dashboard/assets/([a-z.]+)\?v=([0-9a-f]+)" (:body p))]
            (is (= #{"dashboard.js" "dashboard.css" "favicon.svg"} (set (map second links))))
            (doseq [[path file hash] links]
              (let [r (get-raw (str base path) {})]
                (is (= 200 (:status r)) file)
                (is (= (dash/asset-types file) (get-in r [:headers "content-type"])) file)
                (is (= "public, max-age=31536000, immutable" (get-in r [:headers "cache-control"])) file)
                (is (= (str "\"" hash "\"") (get-in r [:headers "etag"])) file)
                (is (= "nosniff" (get-in r [:headers "x-content-type-options"])))
                (is (= 304 (:status (get-raw (str base path) {"If-None-Match" (get-in r [:headers "etag"])}))) file)
                (is (= "no-cache" (get-in (get-raw (str base "/dashboard/assets/" file) {}) [:headers "cache-control"])) file)
                (is (= "no-cache" (get-in (get-raw (str base "/dashboard/assets/" file "?v=old") {}) [:headers "cache-control"])) file)))))
        (testing "an unknown asset is a 404 JSON error naming it; other methods a 405"
          (let [r (tu/request base "/dashboard/assets/..%2Fconfig.edn")]
            (is (= 404 (:status r)))
            (is (= "file" (get-in r [:json "field"]))))
          (is (= 405 (:status (tu/request base "/dashboard" :method :post :json {})))))
        (testing "a plain GET of the live endpoint is a 426 naming Upgrade"
          (let [r (tu/request base "/dashboard/live")]
            (is (= 426 (:status r)))
            (is (= "Upgrade" (get-in r [:json "field"])))))
        (testing "the OpenAPI document describes the dashboard's routes"
          (let [paths (get-in (tu/request base "/openapi.json") [:json "paths"])]
            (is (get-in paths ["/dashboard" "get" "responses" "200" "content" "text/html"]))
            (is (= (sort (keys dash/asset-types))
                   (sort (get-in paths ["/dashboard/assets/{file}" "get" "parameters" 0 "schema" "enum"]))))
            (is (= #{"200" "426" "503"} (set (keys (get-in paths ["/dashboard/live" "get" "responses"])))))
            (is (= "#/components/schemas/Dashboard"
                   (get-in paths ["/dashboard/data" "get" "responses" "200" "content" "application/json" "schema" "$ref"])))))
        (testing "the dashboard's requests are not in the figures it shows"
          (is (feed/await-perf sys 5000))
          (is (not-any? #(= "dashboard" (% "entity")) (get-in (tu/request base "/perf") [:json "minutes"])))))
      (finally (feed/stop! sys) (tu/delete-tree! dir)))))

(deftest snapshot-after-requests
  (let [dir (tu/temp-dir "dash") sys (tu/start-feed! dir {:dashboard {:interval-ms 200 :minutes 5}})]
    (try
      (let [base (feed/url sys)
            a (get-in (tu/request base "/participant" :method :post :json {:name "a"}) [:json "id"])
            b (get-in (tu/request base "/participant" :method :post :json {:name "b"}) [:json "id"])]
        (tu/request base (str "/participant/" a "/friends") :method :post :json {:to b})
        (dotimes [i 20] (tu/request base (str "/participant/" a "/outbound") :method :post :json {:subject (str "s" i) :story "x"}))
        (dotimes [_ 3] (tu/request base "/participant/999999"))
        (tu/request base "/participant/abc")
        (is (feed/await-perf sys 5000))
        (testing "GET /dashboard/data: per entity x operation figures of the current minute, errors split, lags, this instance"
          (let [r (tu/request base "/dashboard/data")
                d (:json r)
                series (into {} (for [s (d "series")] [[(s "entity") (s "operation")] (s "points")]))
                now-pt (fn [k] (last (series k)))
                cur (get-in d ["current" "minute"])]
            (is (= "no-store" (get-in r [:headers "cache-control"])))
            (is (= 5 (get-in d ["window" "minutes"])))
            (is (= 20 ((now-pt ["outbound" "post"]) "count")) "the minute can turn mid-test only in a 1/60 chance")
            (is (= cur ((now-pt ["outbound" "post"]) "minute")))
            (is (false? ((now-pt ["outbound" "post"]) "closed")))
            (is (every? #(number? ((now-pt ["outbound" "post"]) %)) ["p50" "p95" "p99" "rate"]))
            (is (= 4 ((now-pt ["participant" "get"]) "e4xx")) "three 404s and a 400")
            (is (= 0 ((now-pt ["participant" "get"]) "e5xx")))
            (is (= "instance" (d "scope")))
            (is (= (feed/port sys) (get-in d ["instance" "port"])))
            (is (= "embedded" (get-in d ["instance" "profile"])))
            (is (= [true] (map #(% "self") (d "instances"))))
            (is (integer? (get-in d ["lags" "fanout" "posts"])))
            (is (integer? (get-in d ["lags" "search" "posts"])))
            (is (= (reduce + (map #((last %) "count") (filter #(= cur ((last %) "minute")) (vals series))))
                   ((last (d "totals")) "count"))))))
      (finally (feed/stop! sys) (tu/delete-tree! dir)))))

(deftest websocket-updates
  (let [dir (tu/temp-dir "dash") sys (tu/start-feed! dir {:dashboard {:interval-ms 200}})]
    (try
      (let [base (feed/url sys)
            c (ws-connect (ws-url base))
            first-msg (next-json c 5000)]
        (testing "a snapshot at once over the socket"
          (is (some? first-msg))
          (is (= (feed/port sys) (get-in first-msg [:instance :port]))))
        (testing "then new ones every interval, taking in the requests served meanwhile"
          (dotimes [_ 30] (tu/request base "/participant" :method :post :json {:name "x"}))
          (let [seen (tu/eventually 30000 #(and % (some (fn [s] (and (= "participant" (:entity s)) (= "post" (:operation s))
                                                                       (<= 30 (:count (last (:points s))))))
                                                      (:series %)))
                                    #(next-json c 1000))]
            (is (some? seen) "a later message counts the 30 posts")
            (is (< (:now_ms first-msg) (:now_ms seen)))))
        (.get (.sendClose ^WebSocket (:ws c) WebSocket/NORMAL_CLOSURE "bye") 5 TimeUnit/SECONDS))
      (finally (feed/stop! sys) (tu/delete-tree! dir)))))

(deftest a-lag-nobody-reports-is-na-with-the-reason
  (let [r (jperf/flow-recorder {})
        quiet (reify fanout/Fanout
                (-publish! [_ _ _]) (-submit! [_ _]) (-await-idle [_ _] true) (-stats [_] {:submitted 0})
                (-close! [_ _] true))
        now (System/currentTimeMillis)]
    (try
      (perf/record! r :outbound :post 2000000 201 now)
      (perf/record! r :outbound :post 1000000 503 now)
      (let [d (dash/snapshot {:recorder r :fanout quiet :config {:profile :memory}} now 3)]
        (is (= nil (get-in d [:lags :fanout :posts])))
        (is (re-find #"does not report" (get-in d [:lags :search :reason])))
        (is (= [{:entity "outbound" :operation "post"}] (map #(dissoc % :points) (:series d))))
        (is (= {:count 2 :errors 1 :e4xx 0 :e5xx 1 :closed false}
               (select-keys (first (get-in d [:series 0 :points])) [:count :errors :e4xx :e5xx :closed])))
        (is (= 3 (get-in d [:window :minutes]))))
      (finally (perf/close-recorder! r 5000)))))

;; ---------------------------------------------------------------------------------------------------
;; the hub's bounds, on a real server with a snapshot of chosen size

(defn- hub-server [opts snapshot-bytes]
  (let [h (live/hub {} (merge (dash/options (dissoc opts :snapshot))
                              {:snapshot (fn [_ _ _] snapshot-bytes)}))
        srv (http/start-server (live/handler h) {:port 0 :host "127.0.0.1"})]
    {:hub h :server srv :url (str "ws://127.0.0.1:" (http/server-port srv) "/dashboard/live")}))

(defn- raw-upgrade!
  "A WebSocket client that completes the handshake over a plain socket and then never reads."
  ^Socket [port]
  (let [s (Socket. "127.0.0.1" (int port))
        ^OutputStream out (.getOutputStream s)
        ^InputStream in (.getInputStream s)]
    (.setReceiveBufferSize s 4096)
    (.write out (.getBytes (str "GET /dashboard/live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                "Sec-WebSocket-Version: 13\r\n\r\n")))
    (.flush out)
    ;; read the 101's head only
    (loop [tail ""] (when-not (str/ends-with? tail "\r\n\r\n")
                      (let [b (.read in)] (when (neg? b) (throw (ex-info "closed" {}))) (recur (str tail (char b))))))
    s))

(defn- await-true [ms f] (tu/eventually ms true? f))

(deftest bounded-viewers
  (let [{:keys [hub server url]} (hub-server {:max-viewers 2 :interval-ms 100} (.getBytes "{\"n\":1}"))]
    (try
      (let [a (ws-connect url) b (ws-connect url)]
        (is (some? (next-json a 2000)))
        (is (some? (next-json b 2000)))
        (testing "a third viewer is refused before the upgrade: 503"
          (let [e (try (ws-connect url) nil (catch Exception e e))
                ^WebSocketHandshakeException cause (some #(when (instance? WebSocketHandshakeException %) %)
                                                         (take-while some? (iterate #(.getCause ^Throwable %) e)))]
            (is (some? cause))
            (is (= 503 (some-> cause .getResponse .statusCode)))))
        (testing "a viewer that leaves frees its place"
          (.get (.sendClose ^WebSocket (:ws a) WebSocket/NORMAL_CLOSURE "") 5 TimeUnit/SECONDS)
          (is (await-true 5000 #(= 1 (:viewers (live/stats hub)))))
          (let [c (ws-connect url)] (is (some? (next-json c 2000))) (.abort ^WebSocket (:ws c))))
        (.abort ^WebSocket (:ws b))
        (testing "gone viewers leave, and the update thread stops with the last one"
          (is (await-true 5000 #(= {:viewers 0 :running false} (select-keys (live/stats hub) [:viewers :running])))))
        (is (= 1 (:refused (live/stats hub)))))
      (finally @(http/stop-server server)))))

(deftest a-browser-that-stops-reading-blocks-nobody
  ;; 256 KiB per update every 50 ms: the raw client's buffers fill within a few updates
  (let [big (.getBytes (str "{\"pad\":\"" (apply str (repeat (* 256 1024) "x")) "\"}"))
        {:keys [hub server url]} (hub-server {:interval-ms 50 :stall-ms 500} big)
        port (Integer/parseInt (second (re-find #":(\d+)/" url)))]
    (try
      (let [stuck (raw-upgrade! port)
            ok (ws-connect url)
            ticks0 (:ticks (live/stats hub))]
        (testing "the stalled viewer is closed and removed, while a reading one keeps getting updates"
          (is (await-true 10000 #(pos? (:evicted (live/stats hub)))))
          (is (await-true 10000 #(= 1 (:viewers (live/stats hub)))) (pr-str (live/stats hub)))
          (.clear ^LinkedBlockingQueue (:messages ok))
          (is (some? (next-json ok 2000)) "the reading viewer still gets updates")
          (is (< (+ ticks0 10) (:ticks (live/stats hub))) "the update thread never waited for the stalled one"))
        (testing "the server ended the stalled client's connection (the kernel may still hold bytes for it)"
          (is (await-true 10000 #(= 1 (:connections (http/server-stats server)))) (pr-str (http/server-stats server))))
        (.setSoLinger stuck true 0)
        (.close stuck)
        (.abort ^WebSocket (:ws ok))
        (is (await-true 5000 #(= 0 (:viewers (live/stats hub))))))
      (finally @(http/stop-server server)))))
