// The adjudication queue by keyboard: j/k or arrows move between pairs, 1-3 give a
// label, r retires, w withdraws (back to the rule's gold), u undoes the last decision (the page's own
// undo form: the decided pair has left the queue), / edits the reason. Keys typed into the
// reason box are text, not commands. Without this script every button still works by Tab and Enter.
(function () {
  "use strict";
  var items = Array.prototype.slice.call(document.querySelectorAll("article.adjudication"));
  var undoLast = document.querySelector('#undo-last button[data-key="u"]');
  if (undoLast) {
    document.addEventListener("keydown", function (event) {
      var target = event.target;
      if (event.key !== "u" || event.ctrlKey || event.metaKey || event.altKey) return;
      if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      undoLast.click();
    }, true);
  }
  if (!items.length) return;
  var current = 0;

  function focusItem(index) {
    current = Math.max(0, Math.min(items.length - 1, index));
    items.forEach(function (item, i) { item.classList.toggle("current", i === current); });
    items[current].focus();
    items[current].scrollIntoView({ block: "nearest" });
  }

  items.forEach(function (item, index) {
    item.addEventListener("focusin", function () { current = index; });
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) {
      if (event.key === "Escape") { items[current].focus(); event.preventDefault(); }
      return;
    }
    var key = event.key;
    if (key === "j" || key === "ArrowDown") { focusItem(current + 1); event.preventDefault(); return; }
    if (key === "k" || key === "ArrowUp") { focusItem(current - 1); event.preventDefault(); return; }
    if (key === "/") { items[current].querySelector("input.reason").focus(); event.preventDefault(); return; }
    var button = items[current].querySelector('button[data-key="' + key + '"]');
    if (button) { event.preventDefault(); button.click(); }
  });

  // After a decision the page reloads: put the keyboard back on the first pair still in the queue.
  focusItem(0);
})();
