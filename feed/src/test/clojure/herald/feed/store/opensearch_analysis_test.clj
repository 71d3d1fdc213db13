(ns herald.feed.store.opensearch-analysis-test
  "The OpenSearch index's analyzer against the embedded one (herald.feed.store.text): the same terms for text
  of many scripts, emoji, punctuation and case (via the _analyze API of the test node)."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.feed.servers.opensearch :as node]
            [herald.feed.store.search :as search]
            [herald.feed.store.opensearch :as os]
            [herald.feed.store.opensearch-test :as ot]
            [herald.feed.store.opensearch.schema :as schema]
            [herald.feed.store.text :as text]))

(set! *warn-on-reflection* true)

(def samples
  "Text whose analysis must agree."
  ["Ο ΟΔΥΣΣΕΑΣ και ο σίσυφος" "ΆΈΉΊΌΎΏ άέήίόύώ ΪΫ ϊϋ ΐΰ" "Σ ς σ ΣΑΣ" "Köln STRASSE Straße naïve École"
   "İstanbul ıi I" "ǅemal ǄEMAL ǆemal" "ﬁsh ﬂ" "Ǆ" "ΐ" "ß ẞ" "e\u0301 \u00e9"
   "日本語の記事 カタカナ ﾊﾝｶｸ ひらがな" "한국어 ᄀᄁ" "ไทย ภาษา" "ខ្មែរ" "မြန်မာ" "हिन्दी" "עברית ״quoted״" "العربية"
   "русский ЁЖ" "Ꭰ ꭰ Cherokee" "\u2c2f\u2c5f Glagolitic" "\ua7c0\ua7c1 \ua7d0 \ua7cb" "\u1c89\u1c8a"
   "🚀 👍🏽 👨‍👩‍👧 🇩🇪 1️⃣ 🥰 🫠 🫨 🩷 ©®™" "don't O'Neil rock'n'roll" "e-mail x_y a.b 3.14 1,000,000 v2 USD$"
   "http://example.com/a?b=c user@example.org" "#hashtag @mention" "\u0000 \t\n end" "a\u200bb zero width"
   "𝐀𝐁𝐂 𝔘𝔫𝔦" "𠀀𠀁 ext B" "Ａｂｃ ｆｕｌｌ" "Ⅻ ⅻ roman" "Ⓐ ⓐ circled" "ʼn ǰ ΐ special casing"
   (apply str (repeat 300 "x"))])

(defn- os-terms
  "The distinct tokens of s by the index's analyzer on the test node, in order."
  [index s]
  (let [[_ r] (node/request :post (str "/" index "/_analyze") {"analyzer" schema/analyzer-name "text" s})]
    (vec (distinct (map #(get % "token") (get r "tokens"))))))

(deftest same-terms-as-the-embedded-analyzer
  (ot/with-node
    (let [st (ot/open-fresh)]
      (try
        (let [diffs (for [s samples
                          :let [want (text/terms s) got (os-terms (:index st) s)]
                          :when (not= want got)]
                      {:text s :embedded want :opensearch got})]
          (is (empty? diffs) (str/join "\n" (map pr-str diffs))))
        (finally (ot/drop! st))))))

(deftest more-than-1024-terms-are-rejected
  (ot/with-node
    (let [st (ot/open-fresh)]
      (try
        (search/index! st {:id 1 :from 2 :ts 3 :occurred "2026-11-22" :subject "w1" :story "w2"})
        (is (= [] (search/search st (str/join " " (map #(str "w" %) (range 1024))))) "1,024 terms: a query")
        (let [d (try (search/search st (str/join " " (map #(str "w" %) (range 1025)))) nil
                     (catch clojure.lang.ExceptionInfo e (ex-data e)))]
          (is (= ::os/http-error (:type d)))
          (is (str/includes? (str (:error d)) "maxClauseCount is set to 1024") (pr-str d)))
        (finally (ot/drop! st))))))

