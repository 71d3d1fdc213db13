(ns herald.http.files-test
  "herald.http/files and herald.http/resources over real sockets: conditional requests, ranges (single,
  multipart, 416), HEAD, precompressed siblings, index files, path traversal refused, jar resources, TLS and h2."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.http2-test :as h2t]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (herald.http.http2 H2Client$Response)
           (java.io File FileOutputStream)
           (java.net URI URLClassLoader URL)
           (java.net.http HttpClient HttpRequest HttpResponse$BodyHandlers)
           (java.nio.file Files LinkOption Path)
           (java.nio.file.attribute FileAttribute)
           (java.util.jar JarEntry JarOutputStream)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- temp-dir ^File [prefix]
  (.toFile (Files/createTempDirectory prefix (make-array FileAttribute 0))))

(defn- spit-bytes [^File f ^bytes b] (.mkdirs (.getParentFile f)) (Files/write (.toPath f) b ^"[Ljava.nio.file.OpenOption;" (make-array java.nio.file.OpenOption 0)) f)

(def ^:private big (byte-array (map #(unchecked-byte (mod (* 7 %) 251)) (range 300000))))

(defn- site
  "A root with files, a directory with an index, precompressed siblings, a dot-file, and a secret next to it."
  []
  (let [base (temp-dir "herald-files")
        root (File. base "root")]
    (spit (doto (File. root "hello.txt") (-> .getParentFile .mkdirs)) "hello, files\n")
    (spit-bytes (File. root "big.bin") big)
    (spit (doto (File. root "docs/index.html") (-> .getParentFile .mkdirs)) "<h1>docs</h1>")
    (spit (File. root "app.js") "console.log('plain')")
    (spit (File. root "app.js.gz") "GZIPPED")
    (spit (File. root "app.js.br") "BROTLI")
    (spit (File. root "data.custom") "custom")
    (spit (File. root ".env") "SECRET=1")
    (spit (File. base "secret.txt") "top secret")
    {:base base :root root}))

(defn- GET [s uri & [headers]] (ts/GET (ts/port s) uri (or headers {})))

(deftest serves-files-with-validators
  (let [{:keys [root]} (site)]
    (with-server [s (http/files root {:content-types {"custom" "application/x-custom"}}) {}]
      (let [r (GET s "/hello.txt")]
        (is (= 200 (:status r)))
        (is (= "hello, files\n" (:body r)))
        (is (= "text/plain; charset=utf-8" (get-in r [:headers "content-type"])))
        (is (= "13" (get-in r [:headers "content-length"])))
        (is (= "bytes" (get-in r [:headers "accept-ranges"])))
        (let [tag (get-in r [:headers "etag"]) lm (get-in r [:headers "last-modified"])]
          (is (re-matches #"\"[0-9a-f]+-[0-9a-f]+\"" tag))
          (testing "If-None-Match: 304, no body; a list and W/ match too; another tag gets 200"
            (is (= 304 (:status (GET s "/hello.txt" {"If-None-Match" tag}))))
            (is (= 304 (:status (GET s "/hello.txt" {"If-None-Match" (str "\"x\", W/" tag)}))))
            (is (= 200 (:status (GET s "/hello.txt" {"If-None-Match" "\"other\""})))))
          (testing "If-Modified-Since: 304 at or after the mtime, 200 before; ignored when If-None-Match is sent"
            (is (= 304 (:status (GET s "/hello.txt" {"If-Modified-Since" lm}))))
            (is (= 200 (:status (GET s "/hello.txt" {"If-Modified-Since" "Mon, 01 Jan 2001 00:00:00 GMT"}))))
            (is (= 200 (:status (GET s "/hello.txt" {"If-Modified-Since" lm "If-None-Match" "\"other\""})))))
          (testing "a 304 carries the validators"
            (is (= tag (get-in (GET s "/hello.txt" {"If-None-Match" tag}) [:headers "etag"]))))))
      (testing "HEAD: the headers and Content-Length, no body"
        (let [r (ts/request (ts/port s) (ts/request-text "HEAD" "/big.bin") true)]
          (is (= 200 (:status r)))
          (is (= "300000" (get-in r [:headers "content-length"])))
          (is (= "application/octet-stream" (get-in r [:headers "content-type"])))))
      (testing "the content-type table is extensible"
        (is (= "application/x-custom" (get-in (GET s "/data.custom") [:headers "content-type"]))))
      (testing "a large file arrives whole (zero-copy path)"
        (is (= (seq big) (seq (:bytes (GET s "/big.bin"))))))
      (testing "index files, and a directory without its / is redirected"
        (is (= "<h1>docs</h1>" (:body (GET s "/docs/"))))
        (let [r (GET s "/docs?x=1")]
          (is (= 301 (:status r)))
          (is (= "/docs/?x=1" (get-in r [:headers "location"])))))
      (testing "404 for a missing file, a directory without an index; 405 for other methods"
        (is (= 404 (:status (GET s "/nope.txt"))))
        (is (= 404 (:status (GET s "/"))))
        (let [r (ts/request (ts/port s) (ts/request-text "POST" "/hello.txt" {} "x"))]
          (is (= 405 (:status r)))
          (is (= "GET, HEAD" (get-in r [:headers "allow"]))))))))

(defn- raw-get
  "Sends a raw request line for `target` (not re-encoded by any client library)."
  [s target]
  (ts/request (ts/port s) (str "GET " target " HTTP/1.1\r\nHost: x\r\n\r\n")))

(deftest no-path-traversal
  (let [{:keys [base root]} (site)
        outside (.toPath (File. ^File base "secret.txt"))]
    (Files/createSymbolicLink (.toPath (File. ^File root "link-out.txt")) outside (make-array FileAttribute 0))
    (Files/createSymbolicLink (.toPath (File. ^File root "link-in.txt")) (.toPath (File. ^File root "hello.txt"))
                              (make-array FileAttribute 0))
    (with-server [s (http/files root) {}]
      (doseq [target ["/../secret.txt" "/%2e%2e/secret.txt" "/%2E%2E/secret.txt" "/.%2e/secret.txt"
                      "/docs/..%2f..%2fsecret.txt" "/docs/%2e%2e%2f%2e%2e%2fsecret.txt" "/..%5csecret.txt"
                      "/docs%2f..%2f..%2fsecret.txt" "/%5c..%5csecret.txt" "/hello.txt%00" "/hello.txt%00.png"
                      "/./hello.txt" "//hello.txt" "/.env" "/%2eenv" "/link-out.txt" "/%c0%ae%c0%ae/secret.txt"]]
        (let [r (raw-get s target)]
          (is (#{400 404} (:status r)) target)
          (is (not (str/includes? (:body r) "top secret")) target)
          (is (not (str/includes? (:body r) "SECRET")) target)))
      (testing "a symlink that stays inside the root is served"
        (is (= "hello, files\n" (:body (raw-get s "/link-in.txt")))))
      (testing "a file asked for as a directory is not found (curl /hello.txt/ was served as the file)"
        (is (= 200 (:status (raw-get s "/hello.txt"))))
        (is (= 404 (:status (raw-get s "/hello.txt/"))))))
    (testing ":follow-symlinks? true serves a link leaving the root"
      (with-server [s (http/files root {:follow-symlinks? true}) {}]
        (is (= "top secret" (:body (raw-get s "/link-out.txt"))))))
    (testing ":dotfiles? true serves dot-files"
      (with-server [s (http/files root {:dotfiles? true}) {}]
        (is (= "SECRET=1" (:body (raw-get s "/.env"))))))))

(defn- parts
  "The parts of a multipart/byteranges body: [[content-range bytes] ...]."
  [^bytes body ^String ctype]
  (let [boundary (second (re-find #"boundary=(\S+)" ctype))
        text (String. body "ISO-8859-1")]
    (is (str/ends-with? text (str "\r\n--" boundary "--\r\n")))
    (for [p (rest (str/split text (re-pattern (str "\r\n--" boundary "(--)?\r\n"))))
          :let [[head data] (str/split p #"\r\n\r\n" 2)]]
      [(second (re-find #"Content-Range: (.*)" head)) (.getBytes ^String data "ISO-8859-1")])))

(defn- slice [^bytes b from to] (seq (java.util.Arrays/copyOfRange b (int from) (int (inc to)))))

(deftest ranges
  (let [{:keys [root]} (site)]
    (with-server [s (http/files root) {}]
      (testing "single ranges: a-b, a-, -n; 206 with Content-Range"
        (doseq [[spec from to] [["bytes=0-99" 0 99] ["bytes=299990-" 299990 299999] ["bytes=-5" 299995 299999]
                                ["bytes=100-100" 100 100] ["bytes=299000-999999" 299000 299999]]]
          (let [r (GET s "/big.bin" {"Range" spec})]
            (is (= 206 (:status r)) spec)
            (is (= (str "bytes " from "-" to "/300000") (get-in r [:headers "content-range"])) spec)
            (is (= (slice big from to) (seq (:bytes r))) spec))))
      (testing "several ranges: multipart/byteranges, each part with its Content-Range; overlapping ones merged"
        (let [r (GET s "/big.bin" {"Range" "bytes=0-9, 1000-1009, -3"})
              ct (get-in r [:headers "content-type"])
              ps (parts (:bytes r) ct)]
          (is (= 206 (:status r)))
          (is (str/starts-with? ct "multipart/byteranges; boundary="))
          (is (= (count (:bytes r)) (parse-long (get-in r [:headers "content-length"]))))
          (is (= ["bytes 0-9/300000" "bytes 1000-1009/300000" "bytes 299997-299999/300000"] (map first ps)))
          (is (= [(slice big 0 9) (slice big 1000 1009) (slice big 299997 299999)] (map (comp seq second) ps))))
        (let [r (GET s "/big.bin" {"Range" "bytes=0-9,5-20"})]
          (is (= "bytes 0-20/300000" (get-in r [:headers "content-range"])))))
      (testing "unsatisfiable: 416 with Content-Range bytes */length"
        (let [r (GET s "/big.bin" {"Range" "bytes=300000-"})]
          (is (= 416 (:status r)))
          (is (= "bytes */300000" (get-in r [:headers "content-range"])))))
      (testing "malformed or non-byte ranges are ignored: 200 with the whole file"
        (doseq [spec ["bytes=9-1" "bytes=x-y" "items=0-1" "bytes=" "bytes=-"]]
          (let [r (GET s "/hello.txt" {"Range" spec})]
            (is (= 200 (:status r)) spec)
            (is (= "hello, files\n" (:body r)) spec))))
      (testing "If-Range: a matching validator gives the range, another the whole file"
        (let [tag (get-in (GET s "/hello.txt") [:headers "etag"])]
          (is (= 206 (:status (GET s "/hello.txt" {"Range" "bytes=0-4" "If-Range" tag}))))
          (is (= 200 (:status (GET s "/hello.txt" {"Range" "bytes=0-4" "If-Range" "\"stale\""})))))))))

(deftest precompressed-siblings
  (let [{:keys [root]} (site)]
    (with-server [s (http/files root) {}]
      (let [br (GET s "/app.js" {"Accept-Encoding" "gzip, deflate, br"})
            gz (GET s "/app.js" {"Accept-Encoding" "gzip;q=1.0, br;q=0"})
            plain (GET s "/app.js")]
        (is (= ["BROTLI" "br"] [(:body br) (get-in br [:headers "content-encoding"])]))
        (is (= ["GZIPPED" "gzip"] [(:body gz) (get-in gz [:headers "content-encoding"])]))
        (is (= "console.log('plain')" (:body plain)))
        (is (nil? (get-in plain [:headers "content-encoding"])))
        (doseq [r [br gz plain]]
          (is (= "Accept-Encoding" (get-in r [:headers "vary"])))
          (is (= "text/javascript; charset=utf-8" (get-in r [:headers "content-type"]))))
        (is (= 3 (count (distinct (map #(get-in % [:headers "etag"]) [br gz plain])))) "one ETag per representation")
        (is (nil? (get-in (GET s "/hello.txt" {"Accept-Encoding" "br"}) [:headers "vary"])) "no sibling, no Vary")
        (testing "the client's weights and wildcards (curl -H 'Accept-Encoding: gzip;q=1, br;q=0.5' got br)"
          (doseq [[ae enc] [["gzip;q=1, br;q=0.5" "gzip"] ["br;q=0.9, gzip;q=0.8" "br"] ["gzip, br" "br"]
                            ["*" "br"] ["br;q=0, *" "gzip"] ["x-gzip" "gzip"] ["GZIP" "gzip"] ["gzip;Q=0" nil]
                            ["*;q=0" nil] ["identity" nil]]]
            (is (= enc (get-in (GET s "/app.js" {"Accept-Encoding" ae}) [:headers "content-encoding"])) ae)))))
    (with-server [s (http/files root {:precompressed? false}) {}]
      (is (= "console.log('plain')" (:body (GET s "/app.js" {"Accept-Encoding" "br"})))))))

(deftest prefix-and-options
  (let [{:keys [root]} (site)]
    (with-server [s (http/files root {:prefix "/static" :cache-control "max-age=60"}) {}]
      (is (= "hello, files\n" (:body (GET s "/static/hello.txt"))))
      (is (= "max-age=60" (get-in (GET s "/static/hello.txt") [:headers "cache-control"])))
      (is (= 404 (:status (GET s "/hello.txt"))))
      (is (= 404 (:status (GET s "/statichello.txt")))))
    (is (= :herald.http/invalid-option
           (:type (ex-data (try (http/files root {:bogus 1}) (catch Exception e e))))))
    (is (= :herald.http/invalid-option
           (:type (ex-data (try (http/files (File. ^File root "hello.txt")) (catch Exception e e))))))))

(defn- jar-with! ^File [entries]
  (let [f (File/createTempFile "herald-res" ".jar")]
    (with-open [out (JarOutputStream. (FileOutputStream. f))]
      (doseq [[name ^bytes data] entries]
        (.putNextEntry out (JarEntry. ^String name))
        (when data (.write out data))
        (.closeEntry out)))
    f))

(deftest resources-from-a-jar-and-a-directory
  (let [jar (jar-with! [["public/" nil] ["public/index.html" (.getBytes "<h1>jar</h1>")]
                        ["public/big.bin" big] ["public/app.js" (.getBytes "plain")]
                        ["public/app.js.gz" (.getBytes "gz")]])
        {:keys [base]} (site)
        loader (URLClassLoader. (into-array URL [(.toURL (.toURI jar)) (.toURL (.toURI ^File base))]) nil)]
    (with-server [s (http/resources "public" {:loader loader}) {}]
      (testing "a jar entry, streamed from the jar with its length"
        (let [r (GET s "/big.bin")]
          (is (= 200 (:status r)))
          (is (= "300000" (get-in r [:headers "content-length"])))
          (is (= (seq big) (seq (:bytes r))))))
      (is (= "<h1>jar</h1>" (:body (GET s "/"))) "index of the prefix")
      (testing "ranges on a jar entry"
        (let [r (GET s "/big.bin" {"Range" "bytes=10-19"})]
          (is (= 206 (:status r)))
          (is (= (slice big 10 19) (seq (:bytes r)))))
        (let [r (GET s "/big.bin" {"Range" "bytes=0-1,-2"})
              ps (parts (:bytes r) (get-in r [:headers "content-type"]))]
          (is (= [(slice big 0 1) (slice big 299998 299999)] (map (comp seq second) ps)))))
      (testing "conditional request and precompressed sibling in a jar"
        (let [tag (get-in (GET s "/app.js") [:headers "etag"])]
          (is (= 304 (:status (GET s "/app.js" {"If-None-Match" tag})))))
        (is (= "gz" (:body (GET s "/app.js" {"Accept-Encoding" "gzip"})))))
      (testing "HEAD of a jar entry: the length, no body"
        (let [r (ts/request (ts/port s) (ts/request-text "HEAD" "/big.bin") true)]
          (is (= "300000" (get-in r [:headers "content-length"])))))
      (is (= 404 (:status (raw-get s "/%2e%2e/public/index.html"))))
      (is (= 404 (:status (raw-get s "/app.js/"))) "a jar entry asked for as a directory")
      (is (= 404 (:status (raw-get s "/../secret.txt")))))
    (testing "a directory classpath entry serves files"
      (with-server [s (http/resources "root" {:loader loader}) {}]
        (is (= "hello, files\n" (:body (GET s "/hello.txt"))))
        (is (= 404 (:status (raw-get s "/%2e%2e/secret.txt"))))))))

(deftest files-over-tls-and-http2
  (let [{:keys [root]} (site)
        f (ts/tls-files)]
    (testing "TLS (ChunkedFile): whole file and a multipart range"
      (with-server [s (http/files root) {:tls {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)}}]
        (let [^HttpClient c (ts/https-client)
              req (fn [^String range]
                    (.send c (.build (cond-> (HttpRequest/newBuilder (URI. (str "https://127.0.0.1:" (ts/port s) "/big.bin")))
                                       range (.header "Range" range)))
                           (HttpResponse$BodyHandlers/ofByteArray)))]
          (is (= (seq big) (seq ^bytes (.body ^java.net.http.HttpResponse (req nil)))))
          (let [r ^java.net.http.HttpResponse (req "bytes=5-9,20-29")
                ps (parts (.body r) (.orElse (.firstValue (.headers r) "content-type") ""))]
            (is (= 206 (.statusCode r)))
            (is (= [(slice big 5 9) (slice big 20 29)] (map (comp seq second) ps)))))))
    (testing "HTTP/2 (h2c): whole file and a range"
      (with-server [s (http/files root) {}]
        (with-open [c (h2t/h2-client s)]
          (let [^H2Client$Response r (h2t/h2 c "GET" "/big.bin")]
            (is (= 200 (.status r)))
            (is (= (seq big) (seq (.body r)))))
          (let [^H2Client$Response r (h2t/h2 c "GET" "/big.bin" {"range" "bytes=-4"} nil)]
            (is (= 206 (.status r)))
            (is (= (slice big 299996 299999) (seq (.body r))))))))))
