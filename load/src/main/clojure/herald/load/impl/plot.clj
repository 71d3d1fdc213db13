(ns herald.load.impl.plot
  "Line and bar charts as data: a chart spec becomes a list of drawing ops, rendered to inline SVG text or
  to a PNG through Java2D. No network, no charting library."
  (:require [clojure.string :as str])
  (:import (java.awt BasicStroke Color Font RenderingHints)
           (java.awt.geom Path2D$Double)
           (java.awt.image BufferedImage)
           (java.io ByteArrayOutputStream)
           (javax.imageio ImageIO)))

(set! *warn-on-reflection* true)

(def palette
  "Series colours, in order."
  ["#1f77b4" "#d62728" "#2ca02c" "#ff7f0e" "#9467bd" "#8c564b" "#e377c2" "#17becf" "#7f7f7f" "#bcbd22"])
(def ^:private W 860) (def ^:private H 420)

(def size
  "[width height] of every chart image, in pixels."
  [W H])
(def ^:private L 72) (def ^:private R 190) (def ^:private T 40) (def ^:private B 52)

(defn- nice-step [span]
  (let [raw (/ (double span) 5.0)
        mag (Math/pow 10 (Math/floor (Math/log10 (max raw 1e-12))))
        f (/ raw mag)]
    (* mag (cond (< f 1.5) 1 (< f 3.5) 2 (< f 7.5) 5 :else 10))))

(defn- ticks [lo hi]
  (let [step (nice-step (- hi lo))]
    (for [i (range (long (Math/ceil (/ lo step))) (inc (long (Math/floor (/ hi step)))))]
      (* i step))))

(defn- label [v]
  (let [v (double v)]
    (if (== v (Math/rint v)) (str (long v)) (str/replace (format "%.3f" v) #"0+$" ""))))

(defn percentile->x
  "The x position of percentile `p` (0-100) on a percentile-spectrum axis: log10 of 1/(1-p)."
  [p]
  (Math/log10 (/ 1.0 (max 1e-7 (- 1.0 (/ (double p) 100.0))))))

(def ^:private percentile-ticks
  (map (fn [i] [i (case (int i) 0 "0%" 1 "90%" 2 "99%" 3 "99.9%" 4 "99.99%" 5 "99.999%" 6 "99.9999%")]) (range 7)))

(defn- bar-gap
  "The spacing of a bar chart's categories: the smallest step between distinct x values (1 for one)."
  [xs]
  (let [xs (sort (distinct xs))]
    (if (> (count xs) 1) (double (apply min (map - (rest xs) xs))) 1.0)))

(defn- domain
  "[x0 x1 y0 y1] of `chart`. A bar chart's x range is its categories plus half a gap on each side, so that
  every bar group lies inside the plot; y always starts at 0 and ends 8% above the largest value."
  [chart]
  (let [pts (mapcat :points (:series chart))
        xs (map first pts) ys (map second pts)
        bar? (= :bar (:kind chart))
        [x0 x1] (if (seq xs) [(apply min xs) (apply max xs)] [0 1])
        half (when bar? (/ (bar-gap xs) 2.0))
        [x0 x1] (if bar? [(- x0 half) (+ x1 half)] [x0 x1])
        x1 (if (= (:x-scale chart) :percentile) (max 2.0 (Math/ceil x1)) x1)
        x0 (if (= (:x-scale chart) :percentile) 0.0 x0)
        y1 (if (seq ys) (apply max ys) 1)]
    [(double x0) (double (if (<= x1 x0) (+ x0 1.0) x1)) 0.0 (if (pos? y1) (* 1.08 y1) 1.0)]))

(defn- x-ticks
  "[value label] pairs of the x axis: the chart's own :x-ticks (thinned to at most 12), the percentile
  ticks, or round numbers."
  [chart x0 x1]
  (cond
    (:x-ticks chart) (let [ts (filter #(<= x0 (first %) x1) (:x-ticks chart))
                           every (long (Math/ceil (/ (count ts) 12.0)))]
                       (take-nth (max 1 every) ts))
    (= (:x-scale chart) :percentile) (filter #(<= x0 (first %) x1) percentile-ticks)
    :else (map (fn [v] [v (label v)]) (ticks x0 x1))))

(defn plot-area
  "The plot's rectangle inside the image, [left top width height] in pixels: every series is drawn inside it."
  []
  [L T (- W L R) (- H T B)])

(defn- axes-ops [chart [x0 x1 y0 y1] sx sy]
  (let [pw (- W L R) ph (- H T B)]
    (concat
     [[:rect 0 0 W H "#ffffff" nil :background]
      [:text (/ W 2) 22 (:title chart) :middle 15]
      [:rect L T pw ph "#fbfbfb" "#888888" :plot]]
     (mapcat (fn [[v s]] [[:line (sx v) T (sx v) (+ T ph) "#e3e3e3" 1]
                          [:text (sx v) (+ T ph 16) s :middle 11]]) (x-ticks chart x0 x1))
     (mapcat (fn [v] [[:line L (sy v) (+ L pw) (sy v) "#e3e3e3" 1]
                      [:text (- L 6) (+ (sy v) 4) (label v) :end 11]]) (ticks y0 y1))
     [[:text (+ L (/ pw 2)) (- H 10) (:x-label chart) :middle 12]
      [:text 16 (+ T (/ ph 2)) (:y-label chart) :middle 12 :vertical]])))

(defn- series-ops [chart sx sy]
  (let [n (count (:series chart))
        ;; a bar chart: each category's group of n bars fills 80% of the gap between categories, centred on it
        group-w (when (= :bar (:kind chart))
                  (* 0.8 (Math/abs (- (double (sx (bar-gap (mapcat #(map first (:points %)) (:series chart))))) (double (sx 0))))))
        bar-w (when group-w (/ group-w (max 1 n)))]
    (apply concat
           (map-indexed
            (fn [i {:keys [name points]}]
              (let [color (palette (mod i (count palette)))
                    legend [[:rect (- W R -12) (+ T (* i 18)) 12 12 color nil :legend]
                            [:text (- W R -30) (+ T (* i 18) 11) (str name) :start 11]]]
                (concat legend
                        (if bar-w
                          (for [[x y] points]
                            [:rect (+ (- (sx x) (/ group-w 2.0)) (* bar-w i)) (sy y) bar-w (- (sy 0) (sy y)) color nil :bar])
                          [[:polyline (mapv (fn [[x y]] [(sx x) (sy y)]) points) color 1.8]]))))
            (:series chart)))))

(defn chart-ops
  "The drawing ops of `chart`: {:title :x-label :y-label :x-scale (:linear or :percentile) :kind (:line or
  :bar) :x-ticks [[x label] ...] (optional) :series [{:name :points [[x y] ...]}]}. An op is a vector:
  [:rect x y w h fill stroke role] (role :background, :plot, :legend or :bar), [:line x1 y1 x2 y2 colour
  width], [:polyline points colour width] or [:text x y string anchor size vertical?]."
  [chart]
  (let [[x0 x1 y0 y1 :as d] (domain chart)
        pw (- W L R) ph (- H T B)
        sx (fn [x] (+ L (* pw (/ (- (double x) x0) (- x1 x0)))))
        sy (fn [y] (- (+ T ph) (* ph (/ (- (double y) y0) (- y1 y0)))))]
    (concat (axes-ops chart d sx sy) (series-ops chart sx sy))))

(defn- esc [s] (-> (str s) (str/replace "&" "&amp;") (str/replace "<" "&lt;") (str/replace ">" "&gt;") (str/replace "\"" "&quot;")))
(defn- n2 [x] (format "%.1f" (double x)))

(defn svg
  "The chart as a standalone <svg> element (a chart with :ops, drawing ops of the same size as `chart-ops`'s,
  draws those instead: the lab's heat map)."
  [chart]
  (str "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" W "\" height=\"" H "\" viewBox=\"0 0 " W " " H
       "\" font-family=\"sans-serif\">\n"
       (str/join "\n"
                 (for [[op & a] (or (:ops chart) (chart-ops chart))]
                   (case op
                     :rect (let [[x y w h fill stroke] a]
                             (format "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"%s/>" (n2 x) (n2 y) (n2 (max 0 w)) (n2 (max 0 h))
                                     fill (if stroke (str " stroke=\"" stroke "\"") "")))
                     :line (let [[x1 y1 x2 y2 c w] a]
                             (format "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" stroke-width=\"%s\"/>" (n2 x1) (n2 y1) (n2 x2) (n2 y2) c w))
                     :polyline (let [[pts c w] a]
                                 (format "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"%s\"/>" c w
                                         (str/join " " (map (fn [[x y]] (str (n2 x) "," (n2 y))) pts))))
                     :text (let [[x y s anchor size vertical] a]
                             (format "<text x=\"%s\" y=\"%s\" font-size=\"%s\" text-anchor=\"%s\"%s>%s</text>" (n2 x) (n2 y) size (name anchor)
                                     (if vertical (format " transform=\"rotate(-90 %s %s)\"" (n2 x) (n2 y)) "") (esc s))))))
       "\n</svg>"))

(defn- color ^Color [^String hex] (Color/decode hex))

(defn- draw-text [^java.awt.Graphics2D g x y s anchor size vertical]
  (try
    (.setFont g (Font. "SansSerif" Font/PLAIN (int size)))
    (let [w (.stringWidth (.getFontMetrics g) (str s))
          dx (case anchor :middle (/ w 2.0) :end w 0)
          t (.getTransform g)]
      (.setColor g Color/BLACK)
      (.translate g (double x) (double y))
      (when vertical (.rotate g (- (/ Math/PI 2))))
      (.drawString g (str s) (float (- dx)) (float 0))
      (.setTransform g t))
    (catch Throwable _ nil)))

(defn- draw-op [^java.awt.Graphics2D g [op & a]]
  (case op
    :rect (let [[x y w h fill stroke] a
                r (java.awt.geom.Rectangle2D$Double. x y (max 0 w) (max 0 h))]
            (.setColor g (color fill)) (.fill g r)
            (when stroke (.setColor g (color stroke)) (.setStroke g (BasicStroke. 1.0)) (.draw g r)))
    :line (let [[x1 y1 x2 y2 c w] a]
            (.setColor g (color c)) (.setStroke g (BasicStroke. (float w)))
            (.draw g (java.awt.geom.Line2D$Double. x1 y1 x2 y2)))
    :polyline (let [[pts c w] a p (Path2D$Double.)]
                (when (seq pts)
                  (let [[[x y] & more] pts] (.moveTo p x y) (doseq [[x y] more] (.lineTo p x y)))
                  (.setColor g (color c)) (.setStroke g (BasicStroke. (float w)))
                  (.draw g p)))
    :text (let [[x y s anchor size vertical] a] (draw-text g x y s anchor size vertical))))

(defn png
  "The chart (or its :ops, as in `svg`) rendered to PNG bytes with Java2D (headless)."
  ^bytes [chart]
  (System/setProperty "java.awt.headless" "true")
  (let [img (BufferedImage. W H BufferedImage/TYPE_INT_RGB)
        g (.createGraphics img)
        out (ByteArrayOutputStream.)]
    (.setRenderingHint g RenderingHints/KEY_ANTIALIASING RenderingHints/VALUE_ANTIALIAS_ON)
    (.setRenderingHint g RenderingHints/KEY_TEXT_ANTIALIASING RenderingHints/VALUE_TEXT_ANTIALIAS_ON)
    (doseq [op (or (:ops chart) (chart-ops chart))] (draw-op g op))
    (.dispose g)
    (ImageIO/write img "png" out)
    (.toByteArray out)))
