// Artifact-aware writing: while a worker writes, each draft hypothesis is scored (debounced) by
// the artifact monitor's model. When its label can be guessed from the sentence alone, a gentle
// note names the words that give it away; the worker may still submit. On submit, what the notes
// did is recorded (shown, revised) so researchers can measure the effect.
(function () {
  "use strict";
  var config = document.getElementById("artifact-nudge");
  if (!config || !window.fetch) return;
  var form = config.closest("form") || document.querySelector("form.writing-form");
  if (!form) return;
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]");
  var LABELS = ["entailment", "neutral", "contradiction"];
  var DELAY = parseInt(config.dataset.delay || "400", 10);
  var state = {};

  function noteFor(field) {
    var note = field.parentNode.querySelector(".artifact-note");
    if (!note) {
      note = document.createElement("p");
      note.className = "artifact-note";
      note.setAttribute("role", "status");
      note.setAttribute("aria-live", "polite");
      note.hidden = true;
      note.dataset.label = field.name;
      field.insertAdjacentElement("afterend", note);
    }
    return note;
  }

  function show(field, words) {
    var note = noteFor(field);
    var quoted = words.map(function (w) { return "\u201c" + w + "\u201d"; }).join(", ");
    note.textContent = "This sentence could be guessed without reading the line: " + quoted +
      (words.length > 1 ? " give" : " gives") + " it away. Could you write one that needs the line? " +
      "You may still submit it as it is.";
    note.hidden = false;
    var s = state[field.name];
    if (!s.shown) { s.shown = true; s.shownText = field.value; }
    s.words = words;
  }

  function hide(field) { noteFor(field).hidden = true; }

  var submitting = false;

  function score(field) {
    if (submitting) return;  // the task is being sent: its claim will be closed before the answer comes
    var s = state[field.name];
    var text = field.value;
    var asked = ++s.asked;
    fetch(config.dataset.scoreUrl, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf ? csrf.value : ""},
      body: JSON.stringify({text: text, label: field.name, dataset: config.dataset.dataset, claim: config.dataset.claim || ""})
    }).then(function (r) { return r.ok ? r.json() : null; }).then(function (answer) {
      if (!answer || asked !== s.asked) return;  // a newer draft is on its way
      if (answer.guessable) show(field, answer.words); else hide(field);
    }).catch(function () { /* the nudge is a help, never an obstacle */ });
  }

  LABELS.forEach(function (label) {
    var field = form.querySelector("[name=" + label + "]");
    if (!field) return;
    state[label] = {shown: false, shownText: null, words: [], asked: 0, timer: null};
    field.addEventListener("input", function () {
      var s = state[label];
      clearTimeout(s.timer);
      s.timer = setTimeout(function () { score(field); }, DELAY);
    });
  });

  var recorded = false;
  form.addEventListener("submit", function (event) {
    if (recorded) return;
    // The record goes first and the form right after it (at most a second later): sent side by
    // side, the two requests would race, and the record could be lost with the page.
    event.preventDefault();
    recorded = true;
    // A draft typed just before the submit must not be scored after it: the claim is closed then,
    // and the server refuses a note on a task nobody holds (a 403 in the console).
    submitting = true;
    Object.keys(state).forEach(function (label) { clearTimeout(state[label].timer); });
    var records = Object.keys(state).map(function (label) {
      var field = form.querySelector("[name=" + label + "]"), s = state[label];
      return {label: label, text: field.value, shown: s.shown, words: s.words,
              revised: s.shown && field.value.trim() !== (s.shownText || "").trim()};
    });
    var data = new FormData();
    data.append("csrfmiddlewaretoken", csrf ? csrf.value : "");
    data.append("records", JSON.stringify(records));
    data.append("dataset", config.dataset.dataset || "");
    data.append("claim", config.dataset.claim || "");
    var sent = false;
    function send() { if (!sent) { sent = true; form.submit(); } }
    setTimeout(send, 1000);
    fetch(config.dataset.recordUrl, {method: "POST", body: data, credentials: "same-origin", keepalive: true})
      .then(send, send);
  });
})();
