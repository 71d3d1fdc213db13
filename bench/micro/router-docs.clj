;; bench/micro/router-docs.clj: does documentation in route data (herald.http.openapi/openapi keys) cost the router anything?
;; One JVM builds the same 102 routes twice, plain and documented, and times dispatch through each, interleaved.
;; Run (after mvn -pl http -am test-compile and dependency:build-classpath -Dmdep.outputFile=target/bench/http-cp.txt -Dmdep.includeScope=test):
;;   java -cp "http/src/main/clojure:http/src/test/clojure:http/target/classes:$(cat target/bench/http-cp.txt)" clojure.main bench/micro/router-docs.clj
;; 2026-11-26 04:42 UTC, 2 cores shared with other work (load 40-45), JDK 25: documented vs plain median ns/dispatch
;; param 174.0 vs 174.9, static 124.5 vs 124.2, two-params 245.0 vs 243.8 (six interleaved runs each).
(require '[herald.http.router :as r] '[herald.http.measure :refer [ns-per-op]])
(def templates (concat (for [i (range 50)] (str "/static/route" i))
                       (for [i (range 25)] (str "/res" i "/:id"))
                       (for [i (range 25)] (str "/res" i "/:id/sub/:sub"))
                       ["/participant/:id/friends" "/files/*path"]))
(defn mk [doc?] (r/router (mapv (fn [t] [t (cond-> {:get (fn [_] {:status 200})}
                                              doc? (assoc :summary "s" :tags ["t"] :responses {200 {:content {"application/json" {:type "object"}}}}))])
                                templates)))
(def hs {:plain (mk false) :doc (mk true)})
(def reqs {"static" {:request-method :get :uri "/static/route49" :headers {}}
           "param" {:request-method :get :uri "/res24/12345" :headers {}}
           "two-params" {:request-method :get :uri "/res24/7/sub/x%20y" :headers {}}})
(dotimes [_ 2] (doseq [[_ h] hs [_ q] reqs] (ns-per-op 200000 #(h q))))
(def results (atom {}))
(dotimes [i 6]
  (doseq [[k h] (if (even? i) hs (reverse hs)) [l q] reqs]
    (swap! results update [k l] (fnil conj []) (ns-per-op 300000 #(h q)))))
(doseq [[[k l] xs] (sort @results)]
  (println k l "median_ns" (format "%.1f" (nth (sort xs) 3)) (mapv #(Math/round (double %)) xs)))
(shutdown-agents)
