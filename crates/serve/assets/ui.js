// brink serve: the compare button wants exactly two ticked runs; "make this the baseline" posts
// with the X-Brink header (which only this page's own script can send).
(function () {
  "use strict";
  var form = document.getElementById("compare-form");
  if (form) {
    var button = document.getElementById("compare-button");
    var update = function () {
      var n = form.querySelectorAll("input[name=run]:checked").length;
      button.disabled = n !== 2;
    };
    form.addEventListener("change", update);
    update();
  }
  document.querySelectorAll("button[data-baseline]").forEach(function (b) {
    b.addEventListener("click", function () {
      var id = b.getAttribute("data-baseline");
      var status = document.getElementById("ui-status");
      fetch("/api/run/" + encodeURIComponent(id) + "/baseline", { method: "POST", headers: { "X-Brink": "1" } })
        .then(function (r) { return r.text().then(function (t) { if (status) status.textContent = t.trim(); }); })
        .catch(function (e) { if (status) status.textContent = String(e); });
    });
  });
})();
