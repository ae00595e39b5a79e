/* volcanoweb insights: queue history charts (Chart.js, vendored). Data comes from a json_script tag. */
(function () {
  "use strict";
  /* [field, label, colour, dash, drawing order]: Chart.js draws a lower order on top, so the guarantee (often
     equal to the deserved share) is drawn over the deserved line, not hidden under it */
  var SERIES = [
    ["allocated", "Allocated", "#2f6fdf", false, 0],
    ["deserved", "Deserved", "#2e9e6a", [6, 4], 3],
    ["guarantee", "Guarantee", "#d99a1e", [2, 3], 1],
    ["capability", "Capability", "#d64545", [10, 4], 2],
    ["demand", "Pending demand", "#8a94a6", [1, 3], 4]
  ];
  var MARKER_COLORS = { queue: "#2157b8", "scheduler-config": "#b25a1f" };

  function scale(resource) {
    if (resource === "cpu") return { div: 1000, unit: "cores" };
    if (resource === "memory" || resource === "ephemeral-storage" || resource.indexOf("hugepages-") === 0) {
      return { div: 1024 * 1024 * 1024, unit: "GiB" };
    }
    return { div: 1, unit: "" };
  }

  function clock(ms) {
    var d = new Date(ms);
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(d.getHours()) + ":" + two(d.getMinutes()) + (d.getSeconds() ? ":" + two(d.getSeconds()) : "");
  }

  var markerPlugin = {
    id: "changeMarkers",
    afterDatasetsDraw: function (chart, _args, opts) {
      var x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      (opts.markers || []).forEach(function (m) {
        var px = x.getPixelForValue(Date.parse(m.time));
        if (px < area.left || px > area.right) return;
        ctx.save();
        ctx.strokeStyle = MARKER_COLORS[m.kind] || "#475467";
        ctx.setLineDash([4, 3]);
        ctx.beginPath(); ctx.moveTo(px, area.top); ctx.lineTo(px, area.bottom); ctx.stroke();
        if (m.label) { /* the number of the change in the list below the chart */
          ctx.setLineDash([]);
          ctx.fillStyle = MARKER_COLORS[m.kind] || "#475467";
          ctx.font = "bold 11px sans-serif";
          ctx.textAlign = "center";
          ctx.fillText(m.label, px, area.top + 10);
        }
        ctx.restore();
      });
    }
  };

  function draw(root) {
    if (!window.Chart) return;
    (root || document).querySelectorAll("[data-queue-history]").forEach(function (box) {
      var script = document.getElementById(box.dataset.queueHistory);
      if (!script) return;
      var data = JSON.parse(script.textContent);
      box.querySelectorAll("canvas[data-history-resource]").forEach(function (canvas) {
        var resource = canvas.dataset.historyResource, s = scale(resource);
        var datasets = SERIES.map(function (spec) {
          var points = data.points.filter(function (p) { return spec[0] !== "capability" || resource in p.capability; })
            .map(function (p) { return { x: Date.parse(p.time), y: (p[spec[0]][resource] || 0) / s.div }; });
          return { label: spec[1], data: points, borderColor: spec[2], backgroundColor: spec[2], borderDash: spec[3] || [],
            order: spec[4], pointRadius: points.length < 3 ? 3 : 0, borderWidth: spec[0] === "guarantee" ? 3 : 2,
            stepped: spec[0] === "guarantee" || spec[0] === "capability" };
        }).filter(function (d) { return d.data.length; });
        var existing = window.Chart.getChart(canvas);
        if (existing) existing.destroy();
        new window.Chart(canvas, {
          type: "line",
          data: { datasets: datasets },
          options: {
            animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
            interaction: { mode: "nearest", intersect: false },
            scales: {
              x: { type: "linear", min: Date.parse(data.from), max: Date.parse(data.to), ticks: { maxTicksLimit: 8, callback: clock } },
              y: { beginAtZero: true, title: { display: !!s.unit, text: s.unit } }
            },
            plugins: { legend: { position: "bottom" }, changeMarkers: { markers: data.markers },
              tooltip: { callbacks: { title: function (items) { return items.length ? clock(items[0].parsed.x) : ""; } } } }
          },
          plugins: [markerPlugin]
        });
        canvas.dataset.chartReady = "1";
      });
    });
  }
  var PALETTE = ["#2f6fdf", "#2e9e6a", "#d99a1e", "#d64545", "#7b61ff", "#e07b39", "#0f9bb5", "#8a94a6"];
  function drawOverview(root) {
    if (!window.Chart) return;
    (root || document).querySelectorAll("[data-queues-overview]").forEach(function (box) {
      var script = document.getElementById(box.dataset.queuesOverview), canvas = box.querySelector("canvas");
      if (!script || !canvas) return;
      var data = JSON.parse(script.textContent), datasets = [];
      data.series.forEach(function (s, i) {
        var color = PALETTE[i % PALETTE.length];
        ["allocated", "deserved"].forEach(function (field) {
          datasets.push({ label: s.queue + (field === "deserved" ? " (deserved)" : ""), borderColor: color, backgroundColor: color,
            borderDash: field === "deserved" ? [6, 4] : [], pointRadius: s.points.length < 3 ? 3 : 0, borderWidth: 2,
            data: s.points.map(function (p) { return { x: Date.parse(p.time), y: p[field] / 1000 }; }) });
        });
      });
      var existing = window.Chart.getChart(canvas);
      if (existing) existing.destroy();
      new window.Chart(canvas, {
        type: "line", data: { datasets: datasets },
        options: { animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
          scales: { x: { type: "linear", min: Date.parse(data.from), max: Date.parse(data.to), ticks: { maxTicksLimit: 7, callback: clock } },
            y: { beginAtZero: true, title: { display: true, text: "cores" } } },
          plugins: { legend: { position: "bottom" } } }
      });
      canvas.dataset.chartReady = "1";
    });
  }
  document.addEventListener("DOMContentLoaded", function () { draw(document); drawOverview(document); });
  document.addEventListener("htmx:afterSwap", function (e) { draw(e.target); drawOverview(e.target); });
})();
