(ns herald.http.server-test
  "Handler modes, transports, concurrency and large bodies over real sockets."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.io InputStream)
           (java.net URI)
           (java.net.http HttpClient HttpRequest HttpRequest$BodyPublishers HttpResponse$BodyHandlers)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- echo [req]
  {:status 200
   :headers {"Content-Type" "text/plain" "X-Thread" (if (.isVirtual (Thread/currentThread)) "virtual" (.getName (Thread/currentThread)))}
   :body (if-let [b (:body req)] (.readAllBytes ^InputStream b) (:uri req))})

(defn- http-client ^HttpClient [] (-> (HttpClient/newBuilder) (.version java.net.http.HttpClient$Version/HTTP_1_1) .build))

(defn- post ^java.net.http.HttpResponse [^HttpClient c port path ^bytes body]
  (.send c (-> (HttpRequest/newBuilder (URI. (str "http://127.0.0.1:" port path)))
               (.POST (HttpRequest$BodyPublishers/ofByteArray body)) .build)
         (HttpResponse$BodyHandlers/ofByteArray)))

(deftest ^:integration modes-run-the-handler-where-asked
  (doseq [[mode expected] [[:virtual-threads "virtual"] [:worker-pool #"herald-http-worker.*"] [:event-loop #"herald-http-io.*"]]]
    (testing (str mode)
      (with-server [s echo {:mode mode}]
        (let [t ((:headers (ts/GET (ts/port s) "/")) "x-thread")]
          (if (string? expected) (is (= expected t)) (is (re-matches expected t))))))))

(deftest ^:integration concurrent-clients-in-every-mode
  (doseq [mode [:virtual-threads :worker-pool :event-loop] transport [:nio :auto]]
    (testing (str mode " " transport)
      (with-server [s echo {:mode mode :transport transport}]
        (let [p (ts/port s)
              results (doall (for [i (range 16)]
                               (future (let [c (ts/open p)]
                                         (try (doall (for [j (range 10)]
                                                       (do (ts/write! c (ts/request-text "GET" (str "/" i "/" j)))
                                                           (= (str "/" i "/" j) (:body (ts/read-response c))))))
                                              (finally (ts/close! c)))))))]
          (is (every? true? (mapcat deref results))))))))

(deftest ^:integration a-blocked-handler-holds-up-no-other-request
  ;; requests arriving together on many connections are handed to threads together (one event-loop pass); the
  ;; handler of the first blocks until every other request was answered, which never happens if they queue
  ;; behind it
  (doseq [mode [:virtual-threads :worker-pool] blocker [0 7]]
    (testing (str mode " blocker " blocker)
      (let [n 24
            others-done (java.util.concurrent.CountDownLatch. (dec n))]
        (with-server [s (fn [req]
                          (if (= "/block" (:uri req))
                            {:status 200 :body (if (.await others-done 5 java.util.concurrent.TimeUnit/SECONDS)
                                                 "released" "timed out")}
                            {:status 200 :body "quick"}))
                      {:mode mode :io-threads 1}]
          (let [conns (doall (repeatedly n #(ts/open (ts/port s))))]
            (try
              (doseq [[i c] (map-indexed vector conns)]
                (ts/write! c (ts/request-text "GET" (if (= i blocker) "/block" "/quick"))))
              (doseq [[i c] (map-indexed vector conns) :when (not= i blocker)]
                (is (= "quick" (:body (ts/read-response c))))
                (.countDown others-done))
              (is (= "released" (:body (ts/read-response (nth conns blocker)))))
              (finally (run! ts/close! conns)))))))))

(deftest ^:integration pipelined-requests-off-the-event-loop-stay-in-order
  (doseq [mode [:virtual-threads :worker-pool]]
    (testing (str mode)
      (with-server [s (fn [req]
                        (let [i (Long/parseLong (subs (:uri req) 1))]
                          (Thread/sleep (long (rand-int 5)))
                          {:status 200 :body (if (zero? (mod i 5)) (list "/" (str i)) (:uri req))}))
                    {:mode mode}]
        (let [c (ts/open (ts/port s))]
          (try (dotimes [round 3]
                 (ts/write! c (apply str (for [i (range 16)] (ts/request-text "GET" (str "/" i)))))
                 (is (= (map #(str "/" %) (range 16)) (for [_ (range 16)] (:body (ts/read-response c))))))
               (finally (ts/close! c))))))))

(deftest ^:integration large-bodies-both-ways
  (let [big (byte-array (* 3 1024 1024) (byte 7))]
    (with-server [s echo {:max-body-bytes (* 4 1024 1024)}]
      (let [r (post (http-client) (ts/port s) "/echo" big)]
        (is (= 200 (.statusCode r)))
        (is (java.util.Arrays/equals big ^bytes (.body r)))))
    (with-server [s (fn [_] {:status 200 :body (apply str (repeat 200000 "0123456789"))}) {}]
      (is (= 2000000 (count (:body (ts/GET (ts/port s) "/"))))))))

(deftest ^:integration streamed-seq-and-stream-bodies-under-load
  (with-server [s (fn [_] {:status 200 :body (map str (range 2000))}) {}]
    (let [expected (apply str (map str (range 2000)))]
      (is (every? #(= expected %) (pmap (fn [_] (:body (ts/GET (ts/port s) "/"))) (range 8)))))))

(defrecord Events [n])

(extend-protocol http/StreamableResponseBody
  Events
  (write-body-to-stream [{:keys [n]} _ ^java.io.OutputStream out]
    ;; returns at once; another thread writes one event per flush and ends the response by closing
    (future (with-open [out out]
              (dotimes [i n]
                (.write out (.getBytes (str "data: " i "\n\n")))
                (.flush out)
                (Thread/sleep 5))))))

(deftest ^:integration streamable-body-may-finish-later-from-another-thread
  (with-server [s (fn [_] {:status 200 :headers {"Content-Type" "text/event-stream"} :body (->Events 5)}) {}]
    (let [c (ts/open (ts/port s))]
      (try (ts/write! c (str (ts/request-text "GET" "/") (ts/request-text "GET" "/")))
           (let [a (ts/read-response c) b (ts/read-response c)]
             (is (= 5 (count (:chunks a))) "one chunk per flush")
             (is (= (apply str (for [i (range 5)] (str "data: " i "\n\n"))) (:body a) (:body b))
                 "the connection stays usable after the stream closes"))
           (finally (ts/close! c))))))

(defrecord RingBody [text])

(deftest ^:integration bodies-implementing-rings-own-protocol
  (if-let [proto (try (requiring-resolve 'ring.core.protocols/StreamableResponseBody) (catch Exception _ nil))]
    (do (extend RingBody @proto
                {:write-body-to-stream (fn [b _ ^java.io.OutputStream out]
                                         (with-open [out out] (.write out (.getBytes ^String (:text b)))))})
        (with-server [s (fn [_] {:status 200 :body (->RingBody "via ring")}) {}]
          (is (= "via ring" (:body (ts/GET (ts/port s) "/"))))))
    (clojure.test/do-report {:type :skip :message "ring-core is not on the test classpath (Debian libring-core-clojure)"})))

(deftest ^:integration invalid-responses-are-500
  (let [errors (atom 0)]
    (with-server [s (fn [req] (case (:uri req)
                                "/nil" nil
                                "/str" "not a map"
                                "/crlf" {:status 200 :headers {"X-Bad" "a\r\nInjected: 1"} :body ""}
                                "/type" {:status 200 :body (Object.)}
                                "/status" {:status "200" :body ""}))
                  {:error-logger (fn [_ _] (swap! errors inc))}]
      (doseq [u ["/nil" "/str" "/crlf" "/type" "/status"]]
        (let [r (ts/GET (ts/port s) u)]
          (is (= 500 (:status r)) u)
          (is (nil? ((:headers r) "injected")))))
      (is (= 5 @errors)))))

(deftest ^:stress many-connections-many-requests-every-mode
  (doseq [mode [:event-loop :virtual-threads :worker-pool]]
    (testing (str mode)
      (with-server [s echo {:mode mode}]
        (let [p (ts/port s)
              results (doall (for [i (range 200)]
                               (future (let [c (ts/open p 20000)]
                                         (try (every? true?
                                                      (for [batch (partition 10 (range 200))]
                                                        (do (ts/write! c (apply str (for [j batch] (ts/request-text "GET" (str "/" i "/" j)))))
                                                            (every? (fn [j] (= (str "/" i "/" j) (:body (ts/read-response c)))) batch))))
                                              (finally (ts/close! c)))))))]
          (is (every? true? (map deref results))))))))
