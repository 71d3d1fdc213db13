(ns herald.feed.dashboard-browser-test
  "The dashboard in a real browser: Debian's headless Chromium, driven through chromedriver by Selenium, loads
  /dashboard of an embedded feed while a thread of the test sends requests; the charts must get data points and
  change between two reads, the page must be live over its WebSocket with no console error (a script error, a
  blocked resource), and screenshots (light and dark) are saved as target/dashboard.png and
  target/dashboard-dark.png. Reported SKIPPED with the reason where Chromium or chromedriver is missing or does
  not start (build/test-deps.sh installs them)."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :as t :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.test-util :as tu])
  (:import (java.io File)
           (java.time Duration)
           (java.util.logging Level)
           (org.openqa.selenium By JavascriptExecutor OutputType TakesScreenshot WebDriver)
           (org.openqa.selenium.chrome ChromeDriver ChromeDriverService ChromeDriverService$Builder ChromeOptions)
           (org.openqa.selenium.logging LogEntry LogType)))

(set! *warn-on-reflection* true)

(defn- executable [env-var & candidates]
  (some #(let [f (io/file %)] (when (and (.isFile f) (.canExecute f)) (str f)))
        (remove nil? (cons (System/getenv env-var) candidates))))

(defn- start-browser
  "{:driver ChromeDriver} or {:skip reason}."
  []
  (let [chrome (executable "CHROME_BIN" "/usr/bin/chromium" "/usr/bin/chromium-browser" "/usr/bin/google-chrome")
        driver (executable "CHROMEDRIVER" "/usr/bin/chromedriver" "/usr/lib/chromium/chromedriver")]
    (cond
      (nil? chrome) {:skip "no Chromium (apt-get install chromium, or set CHROME_BIN)"}
      (nil? driver) {:skip "no chromedriver (apt-get install chromium-driver, or set CHROMEDRIVER)"}
      :else
      (try
        (let [^java.util.List args ["--headless=new" "--no-sandbox" "--disable-gpu" "--disable-dev-shm-usage"
                                    "--window-size=1280,1400" "--hide-scrollbars"]
              opts (doto (ChromeOptions.)
                     (.setBinary ^String chrome)
                     (.addArguments args)
                     (.setCapability "goog:loggingPrefs" {"browser" "ALL"}))
              ^ChromeDriverService service (-> (ChromeDriverService$Builder.)
                                                (.usingDriverExecutable (File. ^String driver))
                                                (.usingAnyFreePort)
                                                (.build))]
          {:driver (ChromeDriver. service opts)})
        (catch Throwable e {:skip (str "Chromium did not start: " (first (str/split-lines (str (ex-message e)))))})))))

(defn- js [^WebDriver d ^String script] (.executeScript ^JavascriptExecutor d script (object-array 0)))

(defn- reading
  "What the page shows now: update count, data points drawn, the cards, the live state and the requests text."
  [d]
  (let [m (js d (str "return {updates: +document.body.getAttribute('data-updates'),"
                     " points: document.querySelectorAll('.chart rect.bar, .chart circle.pt').length,"
                     " totalBars: document.querySelectorAll('#chart-total rect.bar').length,"
                     " latencyPoints: document.querySelectorAll('#ops circle.pt').length,"
                     " ops: Array.from(document.querySelectorAll('#ops .card')).map(function(c){return c.getAttribute('data-op')}),"
                     " conn: document.getElementById('conn').textContent,"
                     " rateNote: document.getElementById('rate-note').textContent,"
                     " lagFanout: document.getElementById('lag-fanout').textContent,"
                     " instances: document.getElementById('instances').textContent}"))]
    (into {} (map (fn [[k v]] [(keyword k) (if (instance? java.util.List v) (vec v) v)])) m)))

(defn- load!
  "Sends requests to `base` from the calling thread: first a burst of 300 (participants created and read, a few
  404s), then until `stop` is set a mix of participants, friendships, posts, feed reads and searches. Returns
  how many were sent."
  [base stop]
  (let [n (atom 0)
        req (fn [path & opts] (swap! n inc) (apply tu/request base path opts))]
    (dotimes [i 100]
      (let [id (get-in (req "/participant" :method :post :json {:name (str "warm" i)}) [:json "id"])]
        (req (str "/participant/" id))
        (req (str "/participant/" (if (zero? (mod i 10)) 999999999 id)))))
    (loop [i 0 prev nil]
      (if @stop
        @n
        (let [id (get-in (req "/participant" :method :post :json {:name (str "p" i)}) [:json "id"])]
          (when prev (req (str "/participant/" id "/friends") :method :post :json {:to prev}))
          (req (str "/participant/" id "/outbound") :method :post :json {:subject (str "news " i) :story "the dashboard under load"})
          (req (str "/participant/" id "/inbound"))
          (when (zero? (mod i 4)) (req "/outbound?keywords=news&limit=5"))
          (when (zero? (mod i 5)) (req "/participant/999999999"))
          (Thread/sleep 5)
          (recur (inc i) id))))))

(defn- screenshot! [^WebDriver d ^String name]
  (let [dir (io/file (if (.exists (io/file "feed/pom.xml")) "feed/target" "target"))
        f (io/file dir name)]
    (.mkdirs dir)
    (io/copy ^File (.getScreenshotAs ^TakesScreenshot d OutputType/FILE) f)
    (println "dashboard screenshot:" (str f))
    f))

(deftest dashboard-in-chromium
  (let [{:keys [^WebDriver driver skip]} (start-browser)]
    (if skip
      (t/do-report {:type :skip :message skip})
      (let [dir (tu/temp-dir "dash-browser")
            sys (tu/start-feed! dir {:dashboard {:interval-ms 300 :minutes 10}})
            stop (atom false)]
        (try
          (let [base (feed/url sys)
                sent (future (load! base stop))
                _ (Thread/sleep 1500)
                _ (.get driver (str base "/dashboard"))
                first-read (tu/eventually 20000 #(and (<= 2 (:updates %)) (pos? (:totalBars %)) (some #{"outbound-post"} (:ops %)))
                                          #(reading driver))]
            (testing "the charts get data points from the live feed"
              (is (pos? (:totalBars first-read)) (pr-str first-read))
              (is (pos? (:latencyPoints first-read)) (pr-str first-read))
              (is (some #{"outbound-post"} (:ops first-read)) (pr-str (:ops first-read)))
              (is (str/includes? (:instances first-read) (str (feed/port sys))))
              (is (re-find #"posts$" (:lagFanout first-read))))
            (testing "the page is live over its WebSocket and changes between two reads"
              (let [second-read (tu/eventually 10000 #(and (< (+ 2 (:updates first-read)) (:updates %))
                                                           (not= (:rateNote first-read) (:rateNote %)))
                                               #(reading driver))]
                (is (= "live" (:conn second-read)))
                (is (< (:updates first-read) (:updates second-read)))
                (is (not= (:rateNote first-read) (:rateNote second-read))
                    "the request count of the current minute moved")))
            ;; -Dherald.dashboard.load-ms=N: N more ms of load before the screenshots (several minutes of bars for docs/img)
            (when-let [extra (some-> (System/getProperty "herald.dashboard.load-ms") not-empty Long/parseLong)]
              (Thread/sleep (long extra)))
            (screenshot! driver "dashboard.png")
            (testing "dark mode: the page follows the system's preference"
              (.executeCdpCommand ^ChromeDriver driver "Emulation.setEmulatedMedia"
                                  {"features" [{"name" "prefers-color-scheme" "value" "dark"}]})
              (is (= "rgb(13, 17, 23)" (js driver "return getComputedStyle(document.body).backgroundColor")))
              (Thread/sleep 700)
              (screenshot! driver "dashboard-dark.png"))
            (testing "no console error: no script error, no resource blocked by the page's CSP"
              (let [severe (for [^LogEntry e (.getAll (.get (.logs (.manage driver)) LogType/BROWSER))
                                 :when (.equals Level/SEVERE (.getLevel e))]
                             (.getMessage e))]
                (is (empty? severe) (pr-str severe))))
            (reset! stop true)
            (is (<= 300 (long @sent)) "a few hundred requests were sent during the test"))
          (finally
            (reset! stop true)
            (.quit driver)
            (feed/stop! sys)
            (tu/delete-tree! dir)))))))
