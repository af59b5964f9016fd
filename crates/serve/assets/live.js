// brink serve, live view: follows the run's recorded seconds over Server-Sent Events and adds
// each to the charts (latency p50/p90/p99, throughput ok/failed). Values arrive as JSON and go
// into the charts' data only; nothing from them is inserted as markup.
(function () {
  "use strict";
  var info = JSON.parse(document.getElementById("brink-live").textContent);
  var report = window.brinkReport;
  var status = document.getElementById("live-status");
  var specs = report.specs;
  var positive = function (v) { return v > 0 ? v : null; };
  function add(s) {
    var x = specs[0].x.length;
    specs[0].x.push(x);
    specs[0].series[0].values.push(positive(s.p50));
    specs[0].series[1].values.push(positive(s.p90));
    specs[0].series[2].values.push(positive(s.p99));
    specs[1].x.push(x);
    specs[1].series[0].values.push(s.ok);
    specs[1].series[1].values.push(Math.max(0, s.requests - s.ok));
  }
  function refresh() {
    var plots = report.plots();
    specs.forEach(function (spec, i) {
      if (plots[i]) plots[i].setData([spec.x].concat(spec.series.map(function (s) { return s.values; })));
    });
    document.body.setAttribute("data-points", String(specs[0].x.length));
  }
  document.body.setAttribute("data-points", String(specs[0].x.length));
  var source = new EventSource("/api/live/" + encodeURIComponent(info.id) + "?after=" + encodeURIComponent(info.after));
  source.onmessage = function (ev) {
    add(JSON.parse(ev.data));
    refresh();
    if (status) status.textContent = "running: " + specs[0].x.length + " s recorded";
  };
  source.addEventListener("end", function (ev) {
    source.close();
    var ended = {};
    try { ended = JSON.parse(ev.data); } catch (e) { ended = {}; }
    if (status && ended.status === "died") {
      status.textContent = "died: the process recording it is gone; what it recorded is shown";
    } else if (status) {
      status.textContent = "finished: ";
      var a = document.createElement("a");
      a.href = "/run/" + encodeURIComponent(info.id);
      a.textContent = "the report";
      status.appendChild(a);
    }
  });
})();
