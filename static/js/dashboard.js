// Live progress on the dashboard: poll a JSON endpoint for the rows still running and swap in
// the server-rendered row, so there is one template for a row whether it is live or not.
(function () {
  "use strict";
  var INTERVAL_MS = 1500;
  var FINISHED = ["done", "failed"];

  function unfinishedIds(container) {
    var ids = [];
    container.querySelectorAll("[data-id][data-status]").forEach(function (element) {
      if (FINISHED.indexOf(element.dataset.status) === -1) { ids.push(element.dataset.id); }
    });
    return ids;
  }

  function replaceElement(id, prefix, html, container) {
    var old = container.querySelector("#" + prefix + id);
    if (!old) { return; }
    var holder = document.createElement(old.tagName === "TR" ? "tbody" : "div");
    holder.innerHTML = html.trim();
    var fresh = holder.firstElementChild;
    if (fresh) { old.replaceWith(fresh); }
  }

  function poll(container, prefix) {
    var ids = unfinishedIds(container);
    if (!ids.length) { return; }
    var url = container.dataset.pollUrl;
    url += (url.indexOf("?") === -1 ? "?" : "&") + "ids=" + ids.join(",");
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (data) {
        var finishedNow = false;
        data.items.forEach(function (item) {
          replaceElement(item.id, prefix, item.html, container);
          if (item.finished) { finishedNow = true; }
        });
        // The run page shows its results only once done: reload it then, once.
        if (finishedNow && container.dataset.reloadWhenFinished === "yes") {
          window.location.reload();
          return;
        }
        window.setTimeout(function () { poll(container, prefix); }, INTERVAL_MS);
      })
      .catch(function () {
        // A blip (server restart, network): try again more slowly rather than give up.
        window.setTimeout(function () { poll(container, prefix); }, INTERVAL_MS * 4);
      });
  }

  // A launch form answers at once (the job runs elsewhere); until the next page is there, its
  // button says so and cannot be pressed twice.
  function guardLaunchForms() {
    document.querySelectorAll("form[data-busy-text]").forEach(function (form) {
      form.addEventListener("submit", function () {
        var button = form.querySelector("button[type=submit]");
        if (button) {
          button.disabled = true;
          button.textContent = form.dataset.busyText;
        }
      });
    });
  }

  function start() {
    guardLaunchForms();
    var snapshots = document.getElementById("table-snapshots");
    if (snapshots) { poll(snapshots, "snapshot-"); }
    var aggregations = document.getElementById("table-aggregations");
    if (aggregations) { poll(aggregations, "aggregation-"); }
    var premiseImports = document.getElementById("table-premise-imports");
    if (premiseImports) { poll(premiseImports, "premise-import-"); }
    var corpusImports = document.getElementById("table-corpus-imports");
    if (corpusImports) { poll(corpusImports, "corpus-import-"); }
    var runs = document.getElementById("table-runs");
    if (runs) { poll(runs, "run-"); }
    var labellingJobs = document.getElementById("table-labelling-jobs");
    if (labellingJobs) { poll(labellingJobs, "labelling-job-"); }
    var live = document.getElementById("run-live");
    if (live) { poll(live, "run-"); }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
