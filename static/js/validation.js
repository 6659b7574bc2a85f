// Validation batch: choose a label with the mouse or the keys 1/2/3 (two-way: 1/2; ordinal: 1-5);
// focus then moves to the next pair. A key only works where the pair has a button for it.
(function () {
  "use strict";
  var form = document.getElementById("validation-batch");
  if (!form) { return; }
  var pairs = Array.prototype.slice.call(form.querySelectorAll(".validation-pair"));
  var submit = document.getElementById("submit-batch");
  var counter = document.getElementById("answered-count");

  function answered(pair) { return pair.querySelector(".label-input:checked") !== null; }

  function showCount() {
    var done = pairs.filter(answered).length;
    counter.textContent = done + " of " + pairs.length + " answered";
    pairs.forEach(function (pair) { pair.classList.toggle("answered", answered(pair)); });
  }

  // `stay`: focus without scrolling. A page opened afresh stays at its top, where the instructions
  // and the labels' definitions are: on a phone the first pair sits ~865 px down, and scrolling to
  // it would hide them from a first-time participant.
  function focusPair(pair, stay) {
    pairs.forEach(function (p) { p.classList.remove("current"); });
    if (pair) {
      pair.classList.add("current");
      pair.focus({ preventScroll: true });
      if (!stay) { pair.scrollIntoView({ block: "center" }); }
    } else if (submit) {
      submit.focus();
    }
  }

  function currentPair() {
    var active = document.activeElement;
    var holder = active && active.closest ? active.closest(".validation-pair") : null;
    if (holder) { return holder; }
    if (active === submit) { return null; }
    return pairs.filter(function (p) { return !answered(p); })[0] || null;
  }

  function after(pair) {
    var index = pairs.indexOf(pair);
    var rest = pairs.slice(index + 1).filter(function (p) { return !answered(p); });
    if (rest.length) { return rest[0]; }
    // Everything after this one is answered: go back to any earlier gap, else to the button.
    return pairs.filter(function (p) { return !answered(p); })[0] || null;
  }

  form.addEventListener("change", function (event) {
    if (!event.target.classList.contains("label-input")) { return; }
    var pair = event.target.closest(".validation-pair");
    pair.classList.remove("missing");
    showCount();
    focusPair(after(pair));
  });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (["1", "2", "3", "4", "5"].indexOf(event.key) === -1) { return; }
    var tag = document.activeElement && document.activeElement.tagName;
    if (tag === "TEXTAREA" || (tag === "INPUT" && document.activeElement.type === "text")) { return; }
    var pair = currentPair();
    if (!pair) { return; }
    var input = pair.querySelector('.label-input[data-key="' + event.key + '"]');
    if (!input || input.disabled) { return; }  // hold.js shuts the answers when the hold runs out
    event.preventDefault();
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
  });

  // worker.js restores choices kept in the browser (after a reload or a failed send).
  form.addEventListener("draft-restored", function () {
    showCount();
    focusPair(pairs.filter(function (p) { return !answered(p); })[0] || null);
  });

  showCount();
  var firstMissing = form.querySelector(".validation-pair.missing");
  // A refused send (a pair left without a label) scrolls to that pair; a fresh page does not.
  focusPair(firstMissing || pairs.filter(function (p) { return !answered(p); })[0] || pairs[0], !firstMissing);
})();
