// herald.feed live dashboard: renders /dashboard/data snapshots as inline SVG charts, live over the
// WebSocket /dashboard/live (polling /dashboard/data while the socket is down). No dependencies.
(function () {
  "use strict";

  var W = 320, H = 110, PAD_L = 34, PAD_R = 6, PAD_T = 8, PAD_B = 16;
  var lagHistory = [];           // {t, fanout, search}: what this page saw, newest last
  var LAG_KEEP = 300;
  var updates = 0;
  var socket = null, retryMs = 1000, pollTimer = null;

  function $(id) { return document.getElementById(id); }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }[c];
    });
  }
  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (x >= 10000) return Math.round(x).toLocaleString();
    if (x >= 100 || x === 0 || Math.round(x) === x) return x.toFixed(0);
    if (x >= 1) return x.toFixed(1);
    return String(Number(x.toPrecision(2)));
  }
  function ms(x) { return x === null || x === undefined ? "–" : (x < 10 ? x.toFixed(2) : fmt(x)) + " ms"; }
  function hhmm(iso) { var d = new Date(iso); return ("0" + d.getHours()).slice(-2) + ":" + ("0" + d.getMinutes()).slice(-2); }
  function minuteIndex(snap, iso) { return Math.round((Date.parse(iso) - Date.parse(snap.window.from)) / 60000); }

  function niceMax(v) {
    if (!(v > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(v))), n = v / p;
    return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * p;
  }

  function frame(maxY, unit, xLabels) {
    var s = "<svg viewBox=\"0 0 " + W + " " + H + "\" role=\"img\" preserveAspectRatio=\"xMidYMid meet\">";
    s += "<line class=\"axis\" x1=\"" + PAD_L + "\" y1=\"" + (H - PAD_B) + "\" x2=\"" + (W - PAD_R) + "\" y2=\"" + (H - PAD_B) + "\"/>";
    s += "<line class=\"axis\" x1=\"" + PAD_L + "\" y1=\"" + PAD_T + "\" x2=\"" + (W - PAD_R) + "\" y2=\"" + PAD_T + "\"/>";
    s += "<text class=\"label\" x=\"" + (PAD_L - 4) + "\" y=\"" + (PAD_T + 4) + "\" text-anchor=\"end\">" + esc(fmt(maxY) + unit) + "</text>";
    s += "<text class=\"label\" x=\"" + (PAD_L - 4) + "\" y=\"" + (H - PAD_B) + "\" text-anchor=\"end\">0</text>";
    xLabels.forEach(function (l) {
      s += "<text class=\"label\" x=\"" + l.x.toFixed(1) + "\" y=\"" + (H - 3) + "\" text-anchor=\"" + l.anchor + "\">" + esc(l.text) + "</text>";
    });
    return s;
  }

  function minuteLabels(snap) {
    var n = snap.window.minutes, w = (W - PAD_L - PAD_R) / n;
    return [{ x: PAD_L, text: hhmm(snap.window.from), anchor: "start" },
            { x: PAD_L + w * Math.floor(n / 2) + w / 2, text: hhmm(new Date(Date.parse(snap.window.from) + 60000 * Math.floor(n / 2)).toISOString()), anchor: "middle" },
            { x: W - PAD_R, text: "now", anchor: "end" }];
  }

  // bars per minute of the window: layers [{key, cls}] stacked; the current minute is drawn lighter
  function barChart(snap, points, layers, unit, title) {
    var n = snap.window.minutes, w = (W - PAD_L - PAD_R) / n, plotH = H - PAD_T - PAD_B;
    var max = niceMax(Math.max.apply(null, [0].concat(points.map(function (p) {
      return layers.reduce(function (a, l) { return a + (p[l.key] || 0); }, 0);
    }))));
    var s = frame(max, unit, minuteLabels(snap));
    points.forEach(function (p) {
      var i = minuteIndex(snap, p.minute), y = H - PAD_B, partial = !p.closed && p.minute === snap.current.minute;
      if (i < 0 || i >= n) return;
      layers.forEach(function (l) {
        var v = p[l.key] || 0, h = v / max * plotH;
        if (h <= 0) return;
        y -= h;
        s += "<rect class=\"bar " + l.cls + (partial ? " partial" : "") + "\" data-minute=\"" + esc(p.minute) + "\" data-value=\"" + v +
          "\" x=\"" + (PAD_L + i * w + 0.5).toFixed(1) + "\" y=\"" + y.toFixed(1) + "\" width=\"" + Math.max(1, w - 1).toFixed(1) +
          "\" height=\"" + h.toFixed(1) + "\"><title>" + esc(hhmm(p.minute) + (partial ? " (so far)" : "") + ": " + fmt(v) + " " + title) + "</title></rect>";
      });
    });
    return s + "</svg>";
  }

  // latency lines over the minutes of the window for keys [{key, cls, label}], on a log scale (decades), so
  // that a slow warm-up minute does not flatten the rest
  function latencyChart(snap, points, lines) {
    var n = snap.window.minutes, w = (W - PAD_L - PAD_R) / n, plotH = H - PAD_T - PAD_B;
    var vals = [];
    points.forEach(function (p) { lines.forEach(function (l) { if (p.count > 0 && p[l.key] > 0) vals.push(p[l.key]); }); });
    var lo = Math.pow(10, Math.floor(Math.log10(vals.length ? Math.min.apply(null, vals) : 0.1)));
    var hi = Math.pow(10, Math.ceil(Math.log10(vals.length ? Math.max.apply(null, vals) : 10)));
    if (hi <= lo) hi = lo * 10;
    var span = Math.log10(hi) - Math.log10(lo);
    function y(v) { return H - PAD_B - (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / span * plotH; }
    var s = frame(hi, " ms", minuteLabels(snap)).replace(/<text class="label"[^>]*>0<\/text>/, "");
    for (var d = lo; d <= hi; d *= 10) {
      var yy = y(d).toFixed(1);
      if (d > lo && d < hi) s += "<line class=\"axis\" x1=\"" + PAD_L + "\" y1=\"" + yy + "\" x2=\"" + (W - PAD_R) + "\" y2=\"" + yy + "\"/>";
      if (d < hi) s += "<text class=\"label\" x=\"" + (PAD_L - 4) + "\" y=\"" + (Number(yy) + 3).toFixed(1) + "\" text-anchor=\"end\">" + esc(fmt(d)) + "</text>";
    }
    lines.forEach(function (l) {
      var pts = points.filter(function (p) { return p[l.key] !== null && p[l.key] !== undefined && p.count > 0; }).map(function (p) {
        var i = minuteIndex(snap, p.minute);
        return { x: PAD_L + i * w + w / 2, y: y(p[l.key]), p: p };
      });
      if (pts.length > 1) {
        s += "<polyline class=\"line " + l.cls + "\" points=\"" + pts.map(function (q) { return q.x.toFixed(1) + "," + q.y.toFixed(1); }).join(" ") + "\"/>";
      }
      pts.forEach(function (q) {
        s += "<circle class=\"pt " + l.cls + "\" data-value=\"" + q.p[l.key] + "\" cx=\"" + q.x.toFixed(1) + "\" cy=\"" + q.y.toFixed(1) +
          "\" r=\"1.8\"><title>" + esc(hhmm(q.p.minute) + " " + l.label + ": " + ms(q.p[l.key])) + "</title></circle>";
      });
    });
    return s + "</svg>";
  }

  function lagChart() {
    var plotH = H - PAD_T - PAD_B, n = lagHistory.length;
    var max = niceMax(Math.max.apply(null, [0].concat(lagHistory.map(function (h) { return Math.max(h.fanout || 0, h.search || 0); }))));
    var labels = n ? [{ x: PAD_L, text: new Date(lagHistory[0].t).toLocaleTimeString(), anchor: "start" }, { x: W - PAD_R, text: "now", anchor: "end" }] : [];
    var s = frame(max, "", labels);
    [["fanout", "fan"], ["search", "search"]].forEach(function (k) {
      var pts = [];
      lagHistory.forEach(function (h, i) {
        if (h[k[0]] === null || h[k[0]] === undefined) return;
        var x = n > 1 ? PAD_L + i * (W - PAD_L - PAD_R) / (n - 1) : PAD_L;
        pts.push(x.toFixed(1) + "," + (H - PAD_B - h[k[0]] / max * plotH).toFixed(1));
      });
      if (pts.length > 1) s += "<polyline class=\"line " + k[1] + "\" points=\"" + pts.join(" ") + "\"/>";
      if (pts.length === 1) s += "<circle class=\"pt " + k[1] + "\" cx=\"" + pts[0].split(",")[0] + "\" cy=\"" + pts[0].split(",")[1] + "\" r=\"2\"/>";
    });
    return s + "</svg>";
  }

  function lagText(el, note, lag) {
    if (lag.posts === null || lag.posts === undefined) {
      el.textContent = "n/a";
      note.textContent = lag.reason || "not reported";
    } else {
      el.textContent = lag.posts.toLocaleString() + " posts";
      note.textContent = lag.posts === 0 ? "caught up" : "behind";
    }
  }

  function renderInstances(snap) {
    var me = snap.instance, parts = [];
    parts.push("<b>" + (snap.scope === "cluster" ? "cluster-wide figures" : "this instance's figures") + "</b>");
    parts.push("served by <code>" + esc(me.host) + ":" + esc(me.port) + "</code> (pid " + esc(me.pid) + ", profile " + esc(me.profile || "?") +
      ", events " + esc(me.events) + ", version " + esc(me.version) + ")");
    if (snap.instances && snap.instances.length) {
      parts.push((snap.scope === "cluster" ? "instances in these minutes: " : "instance: ") + snap.instances.map(function (i) {
        return "<code class=\"" + (i.self ? "self" : "") + "\">" + esc(i.id) + (i.self ? " (this one)" : "") + "</code>";
      }).join(" "));
    }
    $("instances").innerHTML = parts.join(" · ");
  }

  function renderOps(snap) {
    var box = $("ops");
    if (!snap.series.length) { box.innerHTML = "<p class=\"muted\">no requests yet in this window</p>"; return; }
    box.innerHTML = snap.series.map(function (s) {
      var last = s.points[s.points.length - 1] || {}, cur = last.minute === snap.current.minute ? last : null;
      return "<article class=\"card op\" data-op=\"" + esc(s.entity + "-" + s.operation) + "\">" +
        "<div class=\"op-head\"><h2>" + esc(s.entity) + " · " + esc(s.operation) + "</h2><div class=\"nums\">" +
        "<b>" + (cur ? fmt(cur.rate) : "0") + "</b> req/s · p99 <b>" + (cur ? ms(cur.p99) : "–") + "</b>" +
        (cur && cur.errors ? " · <span class=\"c5xx\">" + cur.errors + " errors</span>" : "") + "</div></div>" +
        "<div class=\"chart\">" + barChart(snap, s.points, [{ key: "rate", cls: "" }], "/s", "req/s") + "</div>" +
        "<div class=\"chart\">" + latencyChart(snap, s.points, [{ key: "p50", cls: "p50", label: "p50" }, { key: "p95", cls: "p95", label: "p95" }, { key: "p99", cls: "p99", label: "p99" }]) + "</div>" +
        "</article>";
    }).join("");
  }

  function render(snap) {
    updates += 1;
    document.body.setAttribute("data-updates", String(updates));
    $("updated").textContent = "updated " + new Date(snap.now_ms).toLocaleTimeString();
    renderInstances(snap);
    var cur = snap.totals.filter(function (t) { return t.minute === snap.current.minute; })[0];
    $("rate").textContent = cur ? fmt(cur.rate) : "0";
    $("rate-note").textContent = (cur ? cur.count.toLocaleString() : "0") + " requests in the " + Math.round(snap.current.elapsed_s) + " s of this minute";
    $("e4xx").textContent = cur && cur.e4xx !== null ? cur.e4xx : (cur ? "?" : "0");
    $("e5xx").textContent = cur && cur.e5xx !== null ? cur.e5xx : (cur ? "?" : "0");
    $("err-note").textContent = cur && cur.count ? (100 * cur.errors / cur.count).toFixed(2) + "% of requests" : "no requests this minute";
    lagText($("lag-fanout"), $("lag-fanout-note"), snap.lags.fanout);
    lagText($("lag-search"), $("lag-search-note"), snap.lags.search);
    $("lag-scope").textContent = "per " + snap.lags.scope;
    lagHistory.push({ t: snap.now_ms, fanout: snap.lags.fanout.posts, search: snap.lags.search.posts });
    if (lagHistory.length > LAG_KEEP) lagHistory.shift();
    $("chart-total").innerHTML = barChart(snap, snap.totals, [{ key: "rate", cls: "" }], "/s", "req/s");
    $("chart-errors").innerHTML = barChart(snap, snap.totals.map(function (t) {
      return { minute: t.minute, closed: t.closed, e4xx: t.e4xx === null ? 0 : t.e4xx, e5xx: t.e5xx === null ? t.errors : t.e5xx };
    }), [{ key: "e5xx", cls: "e5xx" }, { key: "e4xx", cls: "e4xx" }], "", "errors");
    $("chart-lags").innerHTML = lagChart();
    renderOps(snap);
  }

  function setConn(cls, text) { var c = $("conn"); c.className = "pill " + cls; c.textContent = text; }

  function poll() {
    fetch("/dashboard/data", { cache: "no-store" }).then(function (r) { return r.ok ? r.json() : null; })
      .then(function (snap) { if (snap) render(snap); }).catch(function () {});
  }

  function startPolling() {
    if (!pollTimer) { pollTimer = setInterval(poll, 2000); setConn("poll", "polling"); }
  }
  function stopPolling() { if (pollTimer) { clearInterval(pollTimer); pollTimer = null; } }

  function connect() {
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/dashboard/live";
    try { socket = new WebSocket(url); } catch (e) { startPolling(); setTimeout(connect, retryMs); return; }
    socket.onopen = function () { retryMs = 1000; stopPolling(); setConn("live", "live"); };
    socket.onmessage = function (ev) { try { render(JSON.parse(ev.data)); } catch (e) { /* a bad frame: wait for the next */ } };
    socket.onclose = function () {
      socket = null;
      setConn("wait", "reconnecting");
      startPolling();
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 15000);
    };
  }

  function start() {
    poll();
    connect();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
}());
