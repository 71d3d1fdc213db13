(ns herald.flow.validate-test
  "Validation: generated valid jobs pass, generated broken jobs are refused naming the right key, and the model drives the docs."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.flow :as flow]
            [herald.flow.gen :as g]
            [herald.flow.impl.model :as model]
            [herald.flow.impl.types :as t]))

(set! *warn-on-reflection* true)

(defn- refusal
  "The ex-data of validating `job`, or ::accepted."
  [job]
  (try (flow/validate job) ::accepted
       (catch clojure.lang.ExceptionInfo e (assoc (ex-data e) :message (.getMessage e)))))

(defn- task-index [job type] (first (keep-indexed (fn [i t] (when (= type (:task/type t)) i)) (:catalog job))))

(def mutations
  "[name f expected-key]: f breaks a valid job in one place; validation must name expected-key."
  [[:unknown-task-key #(assoc-in % [:catalog 0 :task/bogus] 1) :task/bogus]
   [:unknown-job-key #(assoc % :workfow []) :workfow]
   [:zero-batch #(assoc-in % [:catalog (task-index % :input) :task/batch-size] 0) :task/batch-size]
   [:negative-parallelism #(assoc-in % [:catalog (task-index % :function) :task/parallelism] -1) :task/parallelism]
   [:unresolvable-fn #(assoc-in % [:catalog (task-index % :function) :task/fn] :no.such.ns/f) :task/fn]
   [:fn-not-namespaced #(assoc-in % [:catalog (task-index % :function) :task/fn] :inc) :task/fn]
   [:missing-type #(update-in % [:catalog (task-index % :function)] dissoc :task/type) :task/type]
   [:bad-type #(assoc-in % [:catalog (task-index % :output) :task/type] :sink) :task/type]
   [:missing-plugin #(update-in % [:catalog (task-index % :output)] dissoc :task/plugin) :task/plugin]
   [:edge-to-missing-task #(update % :workflow conj [:in0 :nowhere]) :workflow]
   [:cycle #(let [last-fn (:task/name (peek (filterv (fn [t] (= :function (:task/type t))) (:catalog %))))]
              (update % :workflow conj [:f0 last-fn] [last-fn :f0])) :workflow]
   [:duplicate-name #(update % :catalog conj (get-in % [:catalog 0])) :task/name]
   [:batch-size-on-function #(assoc-in % [:catalog (task-index % :function) :task/batch-size] 8) :task/batch-size]
   [:input-parallelism #(assoc-in % [:catalog (task-index % :input) :task/parallelism] 2) :task/parallelism]
   [:flow-to-non-downstream #(update % :flow-conditions conj {:flow/from :f0 :flow/to [:in0] :flow/predicate :herald.flow.test-fns/big?}) :flow/to]
   [:bad-predicate #(update % :flow-conditions conj {:flow/from :f0 :flow/to :all :flow/predicate [:xor :herald.flow.test-fns/big?]}) :flow/predicate]
   [:window-on-output #(assoc % :windows [{:window/id :w :window/task :out0 :window/type :global :window/aggregation :herald.flow/count}]) :window/task]
   [:window-without-time-key #(assoc % :windows [{:window/id :w :window/task :f0 :window/type :fixed :window/range 10 :window/aggregation :herald.flow/count}]) :window/time-key]
   [:window-range-zero #(assoc (assoc-in % [:catalog (task-index % :function) :task/parallelism] 1) :windows [{:window/id :w :window/task :f0 :window/time-key :at :window/range 0 :window/aggregation :herald.flow/count}]) :window/range]
   [:window-slide-zero #(assoc (assoc-in % [:catalog (task-index % :function) :task/parallelism] 1) :windows [{:window/id :w :window/task :f0 :window/type :sliding :window/time-key :at :window/range 2000 :window/slide 0 :window/aggregation :herald.flow/count}]) :window/slide]
   [:window-slide-over-range #(assoc (assoc-in % [:catalog (task-index % :function) :task/parallelism] 1) :windows [{:window/id :w :window/task :f0 :window/type :sliding :window/time-key :at :window/range 1000 :window/slide 2000 :window/aggregation :herald.flow/count}]) :window/slide]
   [:window-too-many-extents #(assoc (assoc-in % [:catalog (task-index % :function) :task/parallelism] 1) :windows [{:window/id :w :window/task :f0 :window/type :sliding :window/time-key :at :window/range [1 :days] :window/slide 1 :window/aggregation :herald.flow/count}]) :window/slide]
   [:trigger-on-missing-window #(assoc % :triggers [{:trigger/window-id :nope :trigger/on :watermark :trigger/sync :herald.flow.test-fns/collect-fired!}]) :trigger/window-id]
   [:give-up-without-retries #(assoc-in % [:catalog (task-index % :output) :output/give-up-after-ms] 1000) :output/give-up-after-ms]
   [:lifecycle-calls-not-a-map #(assoc % :lifecycles [{:lifecycle/task :all :lifecycle/calls :herald.flow.test-fns/inc-n}]) :lifecycle/calls]])

(defspec generated-valid-jobs-are-accepted 60
  (prop/for-all [shape g/gen-shape]
    (map? (flow/validate (g/job-of shape)))))

(defspec generated-invalid-jobs-name-the-key 150
  (prop/for-all [shape g/gen-shape [mname f want] (gen/elements mutations)]
    (let [r (refusal (f (g/job-of (assoc shape :window? false))))]
      (and (= :herald.flow/invalid-job (:type r))
           (= want (:key r))
           (str/includes? (:message r) (pr-str want))
           (string? (:hint r))
           (vector? (:path r))))))

(def ^:private ok-job
  {:workflow [[:in :inc] [:inc :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :inc :task/type :function :task/fn :herald.flow.test-fns/inc-n}
             {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]})

(deftest messages-name-key-value-and-fix
  (let [r (refusal (assoc-in ok-job [:catalog 0 :task/batch-size] 0))]
    (is (= [:catalog 0 :task/batch-size] (:path r)))
    (is (= 0 (:value r)))
    (is (re-find #":task/batch-size 0 .* Fix: .*\(task :in\)$" (:message r)))
    (is (= :in (:task r))))
  (testing "a task in the catalog but not in the workflow is named"
    (let [r (refusal (update ok-job :catalog conj {:task/name :lost :task/type :function :task/fn :herald.flow.test-fns/inc-n}))]
      (is (= [:task/name :lost] [(:key r) (:value r)]))))
  (testing "a cycle is shown as its path"
    (let [r (refusal (-> ok-job
                         (update :workflow conj [:inc :dbl] [:dbl :inc])
                         (update :catalog conj {:task/name :dbl :task/type :function :task/fn :herald.flow.test-fns/dbl-n})))]
      (is (= :workflow (:key r)))
      (is (= [:inc :dbl :inc] (:value r)))))
  (testing "short-circuit conditions must come first"
    (let [r (refusal (assoc ok-job :flow-conditions
                            [{:flow/from :inc :flow/to :all :flow/predicate :herald.flow.test-fns/big?}
                             {:flow/from :inc :flow/to :all :flow/predicate :herald.flow.test-fns/big? :flow/short-circuit? true}]))]
      (is (= [:flow-conditions 1 :flow/short-circuit?] (:path r)))))
  (testing "a windowed task on several threads needs a group key"
    (let [r (refusal (-> ok-job
                         (assoc-in [:catalog 1 :task/parallelism] 2)
                         (assoc :windows [{:window/id :w :window/task :inc :window/type :global :window/aggregation :herald.flow/count}]
                                :triggers [{:trigger/window-id :w :trigger/on :watermark :trigger/sync :herald.flow.test-fns/collect-fired!}])))]
      (is (= [:window/task :inc] [(:key r) (:value r)]))))
  (testing "plugins check their own options at submit time"
    (let [e (try (flow/submit-job ok-job {:inject {:in {:seq/segments 5} :out {:sink/atom (atom [])}}}) nil
                 (catch clojure.lang.ExceptionInfo e (ex-data e)))]
      (is (= [:herald.flow/invalid-job :seq/segments] [(:type e) (:key e)]))))
  (testing "an injection into a task that does not exist is refused"
    (let [e (try (flow/submit-job ok-job {:inject {:inn {:seq/segments []}}}) nil (catch clojure.lang.ExceptionInfo e (ex-data e)))]
      (is (= [:inject :inn] [(:key e) (:value e)]))))
  (testing "submit options are checked too"
    (let [e (try (flow/submit-job ok-job {:checkpoint-interval 5}) nil (catch clojure.lang.ExceptionInfo e (ex-data e)))]
      (is (= :checkpoint-interval (:key e))))))

(deftest defaults-are-filled-in
  (let [v (flow/validate ok-job)]
    (is (= 64 (get-in v [:catalog 0 :task/batch-size])))
    (is (= 1 (get-in v [:catalog 1 :task/parallelism])))
    (is (= [] (:windows v)))))

(deftest the-model-describes-every-key
  (doseq [[section _ ks] flow/model {:keys [key type doc] :as d} ks]
    (is (keyword? key) (str section))
    (is (and (keyword? type) (string? doc) (contains? d :optional?)) (str section " " key)))
  (is (= :pos-int (:type (flow/describe :task :task/batch-size))))
  (testing "docs/flow.md carries the generated reference"
    (let [f (io/file (System/getProperty "user.dir") "../docs/flow.md")
          f (if (.exists f) f (io/file "docs/flow.md"))]
      (if (.exists f)
        (is (str/includes? (slurp f) (flow/model-markdown)) "regenerate with: bench/flow.sh --docs (see docs/flow.md)")
        (clojure.test/do-report {:type :skip :message "docs/flow.md not found from the working directory"})))))

(deftest typos-get-a-suggestion
  (let [r (refusal (assoc-in ok-job [:catalog 1 :task/paralelism] 2))]
    (is (= :task/paralelism (:key r)))
    (is (= "did you mean :task/parallelism?" (:hint r))))
  (let [r (refusal (assoc ok-job :flow-condition []))]
    (is (= "did you mean :flow-conditions?" (:hint r)))))

(deftest wording-of-common-mistakes
  (testing "an unknown key says \"a task\", \"a flow condition\" (one article)"
    (let [r (refusal (assoc-in ok-job [:catalog 1 :task/parallelsim] 2))]
      (is (= :task/parallelsim (:key r)))
      (is (str/includes? (:message r) "is not a key of a task."))
      (is (not (re-find #"\ba a\b" (:message r))) (:message r))
      (is (str/includes? (:hint r) ":task/parallelism")))
    (let [r (refusal (assoc ok-job :flow-conditions [{:flow/from :inc :flow/to :all :flow/predicate :herald.flow.test-fns/even-n?
                                                      :flow/bogus 1}]))]
      (is (str/includes? (:message r) "is not a key of a flow condition."))))
  (testing "a trigger in a job without windows is told to define one"
    (let [r (refusal (assoc ok-job :triggers [{:trigger/window-id :nope :trigger/on :watermark
                                               :trigger/sync :herald.flow.test-fns/inc-n}]))]
      (is (= :trigger/window-id (:key r)))
      (is (str/includes? (:hint r) "define a window in :windows first"))
      (is (not (str/includes? (:message r) "use one of []")))))
  (testing "a job that is not a map is named as such, by validate and by submit-job (before its options)"
    (doseq [job [nil [] [[:in :out]] "job" 42]]
      (let [v (refusal job)
            s (try (flow/submit-job job {:inject {:in {:seq/segments []}}}) ::accepted
                   (catch clojure.lang.ExceptionInfo e (assoc (ex-data e) :message (ex-message e))))]
        (doseq [r [v s]]
          (is (= [:job job] [(:key r) (:value r)]) (pr-str r))
          (is (str/includes? (:message r) (if (nil? job) "the job is nil" "the job is a ")))
          (is (str/includes? (:hint r) "a job is a map with :workflow and :catalog"))
          (is (not (str/includes? (:message r) ":inject")) (:message r)))))))

(deftest every-model-type-has-words
  (doseq [[section ks] model/by-section [key {:keys [type]}] ks]
    (is (not= (name type) (t/describe-type type nil)) (str section " " key " type " type))))
