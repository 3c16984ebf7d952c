// The dashboard's charts: uPlot (vendored, served locally) over the JSON the page embeds, refreshed
// from dashboard/data/ every few seconds when the operator asks for it.
(function () {
  "use strict";
  const state = {plots: {}, spans: {}, zone: "UTC"};
  window.MH_PLOTS = state.plots;  // for the browser tests: each chart's uPlot, its axes' labels

  function zoned(seconds) { return uPlot.tzDate(new Date(seconds * 1000), state.zone); }

  function pad(n) { return String(n).padStart(2, "0"); }

  // A tick on a time axis, in the console's zone: a time of day while ticks are hours apart, else
  // the day (a 24-hour chart labelled 00:00 at every tick said nothing).
  function tick(date, increment) {
    if (increment >= 86400) return pad(date.getMonth() + 1) + "-" + pad(date.getDate());
    return pad(date.getHours()) + ":" + pad(date.getMinutes());
  }

  function fmt(n) {
    if (n === null || n === undefined) return "—";
    if (Math.abs(n) >= 1000) return Math.round(n).toLocaleString();
    return (Math.round(n * 10) / 10).toString();
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    if (seconds < 1) return "done";
    if (seconds < 90) return Math.round(seconds) + " s";
    if (seconds < 5400) return Math.round(seconds / 60) + " min";
    return (Math.round(seconds / 360) / 10) + " h";
  }

  function options(chart, width) {
    const bars = uPlot.paths.bars({size: [0.6, 40]});
    const hasMs = chart.series.some((s) => s.scale === "ms");
    const axes = [
      // The console's dates: 2026-03-14 09:26; days on a daily chart, times of day on an hourly one.
      {values: chart.daily ? "{MM}-{DD}"
        : (u, splits, axis, space, increment) => splits.map((v) => tick(zoned(v), increment))},
      {label: "count", size: 60},
    ];
    if (hasMs) axes.push({scale: "ms", side: 1, label: "ms", size: 60, grid: {show: false}});
    return {
      width: width, height: 220,
      tzDate: zoned,
      scales: {x: {time: true, range: (u, min, max) => state.spans[chart.id] || [min, max]}, y: {range: (u, min, max) => [0, Math.max(1, max * 1.1)]},
               ms: {range: (u, min, max) => [0, Math.max(1, (max || 1) * 1.1)]}},
      axes: axes,
      series: [{label: chart.daily ? "day" : "time", value: chart.daily ? "{YYYY}-{MM}-{DD}" : "{YYYY}-{MM}-{DD} {HH}:{mm}"}]
        .concat(chart.series.map((s) => ({
          label: s.label, stroke: s.color, scale: s.scale, width: s.bars ? 1 : 2,
          fill: s.bars ? s.color + "99" : undefined, paths: s.bars ? bars : undefined,
          points: {show: !s.bars},
          value: (u, v) => fmt(v),
        }))),
    };
  }

  function card(chart) {
    let el = document.getElementById("mh-chart-" + chart.id);
    if (el) return el;
    el = document.createElement("div");
    el.className = "mh-card mh-chart";
    el.id = "mh-chart-" + chart.id;
    el.innerHTML = "<h3></h3><div class='mh-plot'></div><p class='mh-quiet mh-note'></p>";
    document.getElementById("mh-charts").appendChild(el);
    return el;
  }

  function draw(chart) {
    const el = card(chart);
    state.spans[chart.id] = chart.span && chart.span.length === 2 ? chart.span : null;
    const totals = Object.entries(chart.totals).map(([k, v]) => k + ": " + fmt(v)).join(" · ");
    el.querySelector("h3").textContent = chart.title + (totals ? " (" + totals + ")" : "");
    el.querySelector(".mh-note").textContent = chart.note || "";
    el.dataset.totals = JSON.stringify(chart.totals);
    const data = [chart.x].concat(chart.series.map((s) => s.values));
    const plot = state.plots[chart.id];
    if (plot && plot.series.length === data.length) {
      plot.setData(data);
      return;
    }
    if (plot) plot.destroy();
    const holder = el.querySelector(".mh-plot");
    holder.innerHTML = "";
    state.plots[chart.id] = new uPlot(options(chart, Math.max(360, holder.clientWidth || 420)), data, holder);
  }

  function figures(data) {
    const e = data.embedding || {};
    const set = (id, text) => { const el = document.getElementById(id); if (el) el.textContent = text; };
    set("mh-pending", fmt(e.pending));
    set("mh-rate", e.rate === null || e.rate === undefined ? "—" : fmt(e.rate));
    set("mh-eta", e.pending === 0 ? "done" : duration(e.eta_seconds));
    set("mh-arrival", e.arrival_rate === null || e.arrival_rate === undefined ? "—" : fmt(e.arrival_rate));
    set("mh-arrived", fmt(e.arrived_recent));
    set("mh-embedded", fmt(e.embedded_recent));
    set("mh-errors", fmt(e.embedding_errors));
    set("mh-updated", (data.generated_at || "").slice(0, 16).replace("T", " "));
    if (data.queue) {
      set("mh-queued", fmt(data.queue.queued));
      set("mh-succeeded", fmt(data.queue.succeeded_24h));
      set("mh-failed", fmt(data.queue.failed_24h));
    }
  }

  function render(data) {
    state.zone = data.time_zone || state.zone;
    figures(data);
    data.charts.forEach(draw);
    document.body.dataset.dashboardUpdated = data.generated_at;
  }

  function refresh() {
    fetch(window.MH_DASHBOARD.dataUrl, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
      .then(render)
      .catch((err) => { document.getElementById("mh-updated").textContent = "refresh failed (" + err + ")"; });
  }

  document.addEventListener("DOMContentLoaded", function () {
    render(JSON.parse(document.getElementById("mh-dashboard-data").textContent));
    const every = window.MH_DASHBOARD.refresh;
    if (every > 0) setInterval(refresh, every * 1000);
  });
})();
