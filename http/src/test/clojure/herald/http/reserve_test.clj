(ns herald.http.reserve-test
  "The health-probe reserve over real sockets: with :max-connections held, a probe of a :health-paths path is still
  answered (then its connection closes), any other request in the reserve gets 503, beyond the reserve the
  connection gets 503 at once; every such 503 is counted in server-stats."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]]))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(deftest health-probes-are-answered-when-connections-are-exhausted
  (with-server [s (fn [req] {:status 200 :body (str "ok " (:uri req))})
                {:max-connections 3 :reserved-connections 1 :health-paths #{"/health" "/ready"}}]
    (let [p (ts/port s)
          held (vec (repeatedly 3 #(ts/open p)))]
      (try
        (doseq [c held]  ; three working keep-alive connections: the limit
          (ts/write! c (ts/request-text "GET" "/work"))
          (is (= 200 (:status (ts/read-response c)))))
        (testing "a health probe in the reserve is answered, then its connection closes"
          (let [c (ts/open p)]
            (try (ts/write! c (ts/request-text "GET" "/health?full=1"))
                 (let [r (ts/read-response c)]
                   (is (= 200 (:status r)))
                   (is (= "ok /health" (:body r)))
                   (is (= "close" (get-in r [:headers "connection"]))))
                 (is (ts/eof? c))
                 (finally (ts/close! c)))))
        (testing "any other request in the reserve gets 503"
          (let [c (ts/open p)]
            (try (ts/write! c (ts/request-text "GET" "/work"))
                 (is (= 503 (:status (ts/read-response c))))
                 (is (ts/eof? c))
                 (finally (ts/close! c))))
          (let [c (ts/open p)]
            (try (ts/write! c (ts/request-text "POST" "/health" {} "x"))
                 (is (= 503 (:status (ts/read-response c))) "GET and HEAD only")
                 (finally (ts/close! c)))))
        (testing "beyond the reserve: 503 at once"
          ;; the refused reserve connections close asynchronously: wait until only the three held are open
          (ts/eventually #(= 3 (:connections (http/server-stats s))) 30000)
          (is (= 3 (:connections (http/server-stats s))))
          (let [probe (ts/open p)]
            (ts/eventually #(= 4 (:connections (http/server-stats s))) 30000)
            (let [c (ts/open p)]
              (try (is (= 503 (:status (ts/read-response c))))
                   (finally (ts/close! c))))
            (ts/write! probe (ts/request-text "GET" "/ready"))
            (is (= 200 (:status (ts/read-response probe))) "the reserve connection still answers its probe")
            (ts/close! probe)))
        (is (= 3 (get-in (http/server-stats s) [:errors 503])) "every 503 herald made is counted")
        (finally (run! ts/close! held))))))

(deftest reserve-zero-refuses-at-the-limit
  (with-server [s (fn [_] {:status 200 :body "ok"}) {:max-connections 1 :reserved-connections 0}]
    (let [p (ts/port s)
          a (ts/open p)]
      (try (ts/write! a (ts/request-text "GET" "/x"))
           (is (= 200 (:status (ts/read-response a))))
           (let [c (ts/open p)]
             (try (is (= 503 (:status (ts/read-response c))))
                  (finally (ts/close! c))))
           (finally (ts/close! a))))))
