// A task page's hold (templates/crowd/_hold.html): the time left, the warning with "More time" a few
// minutes before the end, and at the end one message, the page's answers and its send button shut
// (the browser keeps the choices: worker.js). A static file: the CSP allows no inline script.
(function () {
  "use strict";
  var hold = document.querySelector("[data-hold]");
  if (!hold) { return; }
  var out = hold.querySelector("[data-hold-countdown]");
  var time = hold.querySelector("[data-hold-time]");
  var warning = hold.querySelector("[data-hold-warning]");
  var expired = hold.querySelector("[data-hold-expired]");
  var end = Date.now() + 1000 * parseInt(hold.dataset.holdExpiresIn, 10);
  var warnBefore = parseInt(hold.dataset.holdWarnBefore, 10);

  // The task's own form (the one that keeps a draft, or says so): its answers and send button stop working.
  function shut() {
    document.body.classList.add("hold-notice");  // room below the page for the message that stays in view
    document.querySelectorAll("form[data-draft-key], form[data-hold-shuts]").forEach(function (form) {
      form.dataset.holdExpired = "true";
      form.querySelectorAll("input:not([type=hidden]), textarea, select, button").forEach(function (field) {
        field.disabled = true;
      });
      var note = form.querySelector("[data-draft-note]");
      if (note) { note.hidden = true; }
    });
  }

  function tick() {
    var left = Math.max(0, Math.round((end - Date.now()) / 1000));
    if (out) { out.textContent = Math.floor(left / 60) + " min " + ("0" + (left % 60)).slice(-2) + " s"; }
    if (left === 0) {
      if (time) { time.hidden = true; }
      if (warning) { warning.hidden = true; }
      if (expired) { expired.hidden = false; }
      shut();
      return;
    }
    if (warning && warning.hidden && left <= warnBefore) { warning.hidden = false; document.body.classList.add("hold-notice"); }
    window.setTimeout(tick, 1000);
  }

  function start() {
    if (expired && !expired.hidden) { shut(); return; }  // rendered after the end
    tick();
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
