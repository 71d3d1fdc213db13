(ns herald.load.http2-client-test
  "The HTTP/2 client's own framing against herald.http over h2c: the header block it encodes once (every field
  arrives as sent), request bodies larger than the server's stream window (sent as WINDOW_UPDATEs allow) and
  responses larger than the client's windows (it grants more as it reads)."
  (:require [clojure.test :refer [deftest is]]
            [herald.load :as load]
            [herald.load.tls-support :refer [with-http-server]]))

(set! *warn-on-reflection* true)

(defn- zero-errors? [r] (zero? (reduce + (vals (:errors r)))))

(deftest ^:integration a-post-arrives-whole-with-every-field
  ;; 200,000 bytes: more than the server's 65,535-byte initial stream window, so the client must wait for its
  ;; WINDOW_UPDATEs; a long path and a long header value take HPACK's multi-octet lengths
  (let [seen (atom []) body (apply str (map #(char (+ 97 (mod % 26))) (range 200000)))
        path (str "/p/" (apply str (repeat 150 "x")) "?q=1")
        long-value (apply str (repeat 300 "v"))]
    (with-http-server [s (fn [req]
                           (swap! seen conj (assoc (select-keys req [:request-method :uri :query-string :headers :protocol])
                                                   :body (slurp (:body req))))
                           {:status 201 :body "ok"})
                       {}]
      (let [r (load/max-load {:url (str "http://127.0.0.1:" (:port s) path) :method :post :body body
                              :headers {"x-test" "yes" "x-long" long-value} :http2? true :streams 2
                              :connections 1 :duration 0.5 :progress :quiet :timeout 5})
            req (first @seen)]
        (is (zero-errors? r) (pr-str (:errors r)))
        (is (pos? (:requests r)))
        (is (= "HTTP/2.0" (:protocol req)))
        (is (= [:post (subs path 0 (- (count path) 4)) "q=1"] [(:request-method req) (:uri req) (:query-string req)]))
        (is (= ["yes" long-value] [(get-in req [:headers "x-test"]) (get-in req [:headers "x-long"])]))
        (is (every? #(= body (:body %)) @seen) "every body arrives whole")))))

(deftest ^:integration responses-larger-than-the-windows-keep-flowing
  ;; 20 MiB per response over one stream: past the client's 16 MiB stream and connection windows, so even
  ;; the first response stalls (and times out) unless the client sends WINDOW_UPDATEs as it reads
  (let [big (byte-array (* 20 1024 1024) (byte 120))]
    (with-http-server [s (fn [_] {:status 200 :body (java.io.ByteArrayInputStream. big)}) {}]
      (let [r (load/max-load {:url (str "http://127.0.0.1:" (:port s) "/") :http2? true :connections 1
                              :duration 1 :progress :quiet :timeout 20})]
        (is (zero-errors? r) (pr-str (:errors r)))
        (is (pos? (:requests r)) "responses of 20 MiB arrive")))))

(deftest ^:integration a-header-block-over-the-frame-size-goes-in-continuation-frames
  ;; 40,000 bytes of header value: more than the 16,384-byte SETTINGS_MAX_FRAME_SIZE default, so the block leaves
  ;; as a HEADERS frame and CONTINUATION frames; the server (its header limit raised) must see it whole
  (let [seen (atom []) big (apply str (map #(char (+ 97 (mod % 26))) (range 40000)))]
    (with-http-server [s (fn [req] (swap! seen conj (get-in req [:headers "x-big"])) {:status 200 :body "ok"})
                       {:max-header-bytes 65536}]
      (let [r (load/max-load {:url (str "http://127.0.0.1:" (:port s) "/") :headers {"x-big" big} :http2? true
                              :streams 2 :connections 1 :duration 0.5 :progress :quiet :timeout 5})]
        (is (zero-errors? r) (pr-str (:errors r)))
        (is (pos? (:requests r)))
        (is (seq @seen))
        (is (every? #(= big %) @seen) "every request's header value arrives whole")))))
