(ns herald.http.compojure-test
  "An unmodified Compojure app with Ring's params, cookies and multipart middleware on herald, over a real socket."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.http :as http])
  (:import (java.io ByteArrayOutputStream)
           (java.net URI)
           (java.net.http HttpClient HttpRequest HttpRequest$BodyPublishers HttpResponse
                          HttpResponse$BodyHandlers)
           (java.security MessageDigest)
           (java.time Duration)))

(set! *warn-on-reflection* true)

(def ^:private missing
  "Why the test cannot run, or nil. Debian's libring-core-clojure and libcompojure-clojure put the jars under
  /usr/share/maven-repo; http/pom.xml's debian-compojure profile puts them on the test classpath."
  (cond
    (not (io/resource "compojure/core.clj"))
    (str "Compojure is not on the test classpath (install Debian's libcompojure-clojure and libring-core-clojure, "
         "e.g. make test-deps, so the debian-compojure Maven profile activates)")
    (not (io/resource "ring/middleware/multipart_params.clj"))
    "ring-core (ring.middleware.multipart-params) is not on the test classpath"))

(def ^:private app-source
  "The Compojure app, as a user would write it (evaluated only when Compojure is present)."
  '(do
     (require '[compojure.core :refer [routes GET POST context]]
              '[compojure.route :as route]
              '[ring.middleware.params :refer [wrap-params]]
              '[ring.middleware.cookies :refer [wrap-cookies]]
              '[ring.middleware.multipart-params :refer [wrap-multipart-params]])
     (-> (routes
          (GET "/hello/:name" [name greeting] (str (or greeting "Hello") ", " name "!"))
          (POST "/form" [a b :as req] (str "a=" a " b=" (pr-str b) " ct=" (get-in req [:headers "content-type"])))
          (GET "/visits" {cookies :cookies}
            (let [n (inc (Long/parseLong (get-in cookies ["visits" :value] "0")))]
              {:status 200 :cookies {"visits" {:value (str n) :path "/"}} :body (str "visit " n)}))
          (context "/files" []
            (POST "/" {params :params}
              (let [{:keys [filename content-type size tempfile]} (get params "file")
                    digest (.digest (java.security.MessageDigest/getInstance "SHA-256")
                                    (java.nio.file.Files/readAllBytes (.toPath ^java.io.File tempfile)))]
                (str/join "|" [filename content-type size (format "%064x" (BigInteger. 1 digest))
                               (get params "note")]))))
          (route/not-found "nothing here"))
         wrap-cookies
         wrap-multipart-params
         wrap-params)))

(def ^:private ^HttpClient client
  (delay (-> (HttpClient/newBuilder) (.connectTimeout (Duration/ofSeconds 30)) .build)))

(defn- send! ^HttpResponse [port method path headers ^bytes body]
  (let [b (-> (HttpRequest/newBuilder (URI/create (str "http://127.0.0.1:" port path)))
              (.timeout (Duration/ofSeconds 60))
              (.method method (if body (HttpRequest$BodyPublishers/ofByteArray body) (HttpRequest$BodyPublishers/noBody))))]
    (doseq [[k v] headers] (.header b k v))
    (.send ^HttpClient @client (.build b) (HttpResponse$BodyHandlers/ofString))))

(defn- multipart ^bytes [boundary parts]
  (let [out (ByteArrayOutputStream.)
        w (fn [^String s] (.writeBytes out (.getBytes s "UTF-8")))]
    (doseq [{:keys [name filename content-type ^bytes data]} parts]
      (w (str "--" boundary "\r\nContent-Disposition: form-data; name=\"" name "\""
              (when filename (str "; filename=\"" filename "\"")) "\r\n"
              (when content-type (str "Content-Type: " content-type "\r\n")) "\r\n"))
      (.writeBytes out data)
      (w "\r\n"))
    (w (str "--" boundary "--\r\n"))
    (.toByteArray out)))

(defn- sha256 [^bytes b] (format "%064x" (BigInteger. 1 (.digest (MessageDigest/getInstance "SHA-256") b))))

(defn- header [^HttpResponse r ^String k] (.orElse (.firstValue (.headers r) k) nil))

(deftest ^:integration compojure-app-runs-unmodified
  (if missing
    (clojure.test/do-report {:type :skip :message missing})
    (let [app (binding [*ns* (the-ns 'herald.http.compojure-test)] (eval app-source))
          srv (http/start-server app {:port 0 :host "127.0.0.1"})
          port (http/server-port srv)]
      (try
        (testing "route params and query params (ring.middleware.params)"
          (let [r (send! port "GET" "/hello/W%C3%B6rld?greeting=Hi+there" {} nil)]
            (is (= 200 (.statusCode r)))
            (is (= "Hi there, Wörld!" (.body r)))))
        (testing "urlencoded form, repeated keys as a vector"
          (let [r (send! port "POST" "/form" {"Content-Type" "application/x-www-form-urlencoded"}
                         (.getBytes "a=%E2%82%AC1&b=x&b=y" "UTF-8"))]
            (is (= "a=€1 b=[\"x\" \"y\"] ct=application/x-www-form-urlencoded" (.body r)))))
        (testing "cookies in and Set-Cookie out (ring.middleware.cookies)"
          (let [r1 (send! port "GET" "/visits" {} nil)
                r2 (send! port "GET" "/visits" {"Cookie" "other=1; visits=41"} nil)]
            (is (= "visit 1" (.body r1)))
            (is (= "visits=1;Path=/" (header r1 "set-cookie")))
            (is (= "visit 42" (.body r2)))))
        (testing "multipart upload with a binary file (ring.middleware.multipart-params)"
          (let [data (byte-array (map unchecked-byte (concat (range 256) (range 256) (.getBytes "\r\n--x\r\n"))))
                boundary "----herald-boundary-7MA4YWxkTrZu0gW"
                body (multipart boundary [{:name "note" :data (.getBytes "naïve note" "UTF-8")}
                                          {:name "file" :filename "data.bin" :content-type "application/octet-stream"
                                           :data data}])
                r (send! port "POST" "/files/" {"Content-Type" (str "multipart/form-data; boundary=" boundary)} body)]
            (is (= 200 (.statusCode r)))
            (is (= (str/join "|" ["data.bin" "application/octet-stream" (alength data) (sha256 data) "naïve note"])
                   (.body r)))))
        (testing "HEAD through Compojure's GET route and the not-found route"
          (let [h (send! port "HEAD" "/hello/x" {} nil)
                nf (send! port "GET" "/nope" {} nil)]
            (is (= 200 (.statusCode h)))
            (is (= "" (.body h)) "Compojure itself drops the body of HEAD responses")
            (is (= [404 "nothing here"] [(.statusCode nf) (.body nf)]))))
        (finally @(http/stop-server srv))))))
