// brink report: draws the charts described in #brink-charts with uPlot. Every decision about
// what to plot was made when the page was written; this script only draws. Text from the data
// reaches the page through uPlot's legend (textContent) and canvas labels, never as markup.
(function () {
  "use strict";
  var specs = JSON.parse(document.getElementById("brink-charts").textContent);
  var plots = [];

  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }
  function palette() {
    var out = [];
    for (var i = 1; i <= 8; i++) out.push(css("--c" + i));
    return out;
  }
  function fmt(v) {
    if (v == null) return "-";
    var a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(2) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
    if (a >= 100) return v.toFixed(0);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(3);
  }
  function pctLabel(x) {
    if (x == null || !(x >= 1)) return "-";
    if (x >= 1e6) return "max";
    var p = 100 - 100 / x;
    return (Math.round(p * 1000) / 1000) + "%";
  }

  // Vertical marks (the knee, the maximum sustainable level) drawn after the series.
  function marksPlugin(marks) {
    return {
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = css("--mark");
          ctx.fillStyle = css("--mark");
          ctx.setLineDash([4, 4]);
          ctx.lineWidth = 1.5 * devicePixelRatio;
          ctx.font = (11 * devicePixelRatio) + "px sans-serif";
          var pad = 4 * devicePixelRatio;
          marks.forEach(function (m, i) {
            var x = u.valToPos(m.x, "x", true);
            if (!isFinite(x)) return;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            // Right of its line, or left of it where the label would leave the plot; each
            // mark on its own row.
            var fits = x + pad + ctx.measureText(m.label).width <= u.bbox.left + u.bbox.width;
            ctx.textAlign = fits ? "left" : "right";
            ctx.fillText(m.label, fits ? x + pad : x - pad, u.bbox.top + (14 + 14 * i) * devicePixelRatio);
          });
          ctx.restore();
        }]
      }
    };
  }

  function options(spec, width) {
    var colors = palette();
    var fg = css("--fg"), grid = css("--grid");
    var scales = { x: { time: false } };
    if (spec.x_log) scales.x.distr = 3;
    // A percentile axis runs from 0% (x = 1) to the maximum (x = 1e6), labelled per decade.
    if (spec.x_percentile) scales.x.range = [1, 1e6];
    var decade = function (v) { return v != null && Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9; };
    var axes = [{
      label: spec.x_label, stroke: fg, grid: { stroke: grid },
      values: spec.x_percentile
        ? function (u, ticks) { return ticks.map(function (v) { return decade(v) ? pctLabel(v) : ""; }); }
        : undefined
    }];
    spec.axes.forEach(function (a) {
      scales[a.scale] = a.log ? { distr: 3 } : {};
      axes.push({
        scale: a.scale, label: a.label, side: a.side ? 1 : 3, stroke: fg,
        grid: { show: a.side === 0, stroke: grid },
        values: function (u, ticks) { return ticks.map(function (v) { return v == null ? "" : fmt(v); }); },
        size: 60
      });
    });
    var series = [{ label: spec.x_label, value: function (u, v) { return spec.x_percentile ? pctLabel(v) : fmt(v); } }];
    spec.series.forEach(function (s, i) {
      var c = colors[i % colors.length];
      series.push({
        label: s.label, scale: s.scale, stroke: c, width: 1.5,
        dash: s.dash ? [6, 4] : undefined,
        points: { show: s.points, size: 7, fill: c },
        paths: s.points ? function () { return null; } : undefined,
        spanGaps: !!s.join,
        value: function (u, v) { return fmt(v); }
      });
    });
    return {
      title: spec.title, width: width, height: 300, scales: scales, axes: axes, series: series,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      plugins: spec.marks.length ? [marksPlugin(spec.marks)] : []
    };
  }

  function draw() {
    plots.forEach(function (p) { p.destroy(); });
    plots = [];
    document.querySelectorAll("figure.chart").forEach(function (fig) {
      var spec = specs[Number(fig.getAttribute("data-chart"))];
      if (!spec) return;
      fig.textContent = "";
      var data = [spec.x].concat(spec.series.map(function (s) { return s.values; }));
      var width = Math.max(320, fig.clientWidth || 600);
      plots.push(new uPlot(options(spec, width), data, fig));
      if (spec.note) {
        var cap = document.createElement("figcaption");
        cap.textContent = spec.note;
        fig.appendChild(cap);
      }
    });
  }

  draw();
  // The web UI's live view adds points to these and redraws.
  window.brinkReport = { specs: specs, plots: function () { return plots; }, redraw: draw };
  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(draw, 150);
  });
  var scheme = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)");
  if (scheme && scheme.addEventListener) scheme.addEventListener("change", draw);
  window.addEventListener("beforeprint", draw);
})();
