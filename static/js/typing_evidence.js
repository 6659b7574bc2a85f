// How each sentence was written (issue 40; docs/quality.md, "How hypotheses were written").
// <form data-typing-evidence="record|warn|refuse|hold"> with <input type=hidden name=typing_evidence>:
// for every text field of the form this counts keystrokes, deletions and the characters that
// arrived by typing, paste, drop, untrusted (synthetic) events, a script setting the value, or
// trusted input with no keystroke; the time to the first key, the time spent typing and the mean
// and coefficient of variation of the intervals between keys; and, for the page, how often and
// how long the participant was in another tab or window. Never a key or a text: only numbers,
// posted with the form. "warn" tells the participant at once; "refuse" also stops pastes and drops.
(function () {
  "use strict";
  var PAUSE_MS = 2000; // a longer gap between keys is thinking, not typing: not an interval
  var WARNING = "Please type your own sentences: this study measures how sentences are typed (never what you type).";
  var REFUSAL = "Pasting is turned off in this study: please type your own sentence.";

  function now() { return Math.round(window.performance.now()); }

  // Characters of `after` that are not in `before` (same start and end kept): what a script changed.
  function changedChars(before, after) {
    var start = 0;
    var limit = Math.min(before.length, after.length);
    while (start < limit && before[start] === after[start]) { start++; }
    var end = 0;
    while (end < limit - start && before[before.length - 1 - end] === after[after.length - 1 - end]) { end++; }
    return Math.max(0, after.length - start - end);
  }

  function countsKey(event) {
    if (!event.isTrusted || event.ctrlKey || event.metaKey || event.altKey) { return false; }
    var key = event.key || "";
    return key.length === 1 || key === "Backspace" || key === "Delete" || key === "Enter" ||
      key === "Unidentified" || key === "Process";
  }

  function track(form) {
    var output = form.querySelector("input[name=typing_evidence]");
    if (!output) { return; }
    var mode = form.getAttribute("data-typing-evidence") || "record";
    var openedAt = now();
    var page = { away: 0, awayMs: 0, awaySince: null, returns: 0 };
    var states = {};
    var previous = {};
    try { previous = (JSON.parse(output.value || "{}").fields) || {}; } catch (error) { previous = {}; }

    function warn(field, text) {
      if (mode !== "warn" && mode !== "refuse") { return; }
      var id = (field.id || field.name) + "-typing-warning";
      var note = document.getElementById(id);
      if (!note) {
        note = document.createElement("p");
        note.id = id;
        note.className = "message warning typing-warning";
        note.setAttribute("role", "alert");
        field.insertAdjacentElement("afterend", note);
      }
      note.textContent = text;
    }

    function fieldState(field) {
      var old = previous[field.name];
      // A page sent back (a refused submit) keeps what the first page counted, if the text is the same length.
      if (old && typeof old === "object" && old.len === field.value.length) {
        var kept = {};
        Object.keys(old).forEach(function (key) { kept[key] = old[key]; });
        kept.sum = (kept.m || 0) * (kept.n || 0);
        kept.sq = kept.n > 1 ? Math.pow((kept.cv || 0) * (kept.m || 0), 2) * (kept.n - 1) + kept.n * Math.pow(kept.m || 0, 2) : kept.sum * (kept.m || 0);
        kept.lastKey = null; kept.keyPending = false; kept.composing = false;
        kept.value = field.value; kept.seenReturns = page.returns; kept.fk = null;
        return kept;
      }
      return {
        k: 0, d: 0, t: 0, p: 0, dr: 0, u: 0, s: 0, nk: 0, pre: field.value.length, ap: 0, rp: 0,
        fk: null, tt: 0, n: 0, sum: 0, sq: 0,
        lastKey: null, keyPending: false, composing: false, value: field.value, seenReturns: page.returns
      };
    }

    function noticeScript(field, state) {
      if (field.value !== state.value) {
        var changed = changedChars(state.value, field.value);
        state.s += changed;
        state.value = field.value;
        if (changed) { warn(field, WARNING); }
      }
    }

    function write() {
      var fields = {};
      Object.keys(states).forEach(function (name) {
        var state = states[name];
        var field = form.elements[name];
        if (field) { noticeScript(field, state); }
        var mean = state.n ? state.sum / state.n : null;
        var variance = state.n > 1 ? Math.max(0, (state.sq - state.n * mean * mean) / (state.n - 1)) : null;
        fields[name] = {
          k: state.k, d: state.d, t: state.t, p: state.p, dr: state.dr, u: state.u, s: state.s, nk: state.nk,
          pre: state.pre, ap: state.ap, rp: state.rp, fk: state.fk, tt: Math.round(state.tt), n: state.n,
          m: mean === null ? null : Math.round(mean * 10) / 10,
          cv: variance === null || !mean ? null : Math.round(1000 * Math.sqrt(variance) / mean) / 1000,
          len: field ? field.value.length : 0
        };
      });
      output.value = JSON.stringify({ v: 1, open: now() - openedAt, away: page.away, awayMs: page.awayMs, fields: fields });
    }

    var fields = form.querySelectorAll("textarea[name], input[type=text][name]");
    Array.prototype.forEach.call(fields, function (field) {
      var state = states[field.name] = fieldState(field);

      field.addEventListener("keydown", function (event) {
        if (!countsKey(event)) { return; }
        var at = now();
        state.k++;
        if (state.fk === null) { state.fk = at - openedAt; }
        if (state.lastKey !== null && at - state.lastKey < PAUSE_MS) {
          var gap = at - state.lastKey;
          state.n++; state.sum += gap; state.sq += gap * gap; state.tt += gap;
        }
        state.lastKey = at;
        state.keyPending = true;
      });
      field.addEventListener("compositionstart", function () { state.composing = true; });
      field.addEventListener("compositionend", function () { state.composing = false; });
      field.addEventListener("beforeinput", function () { noticeScript(field, state); });

      function refuse(event) {
        if (mode !== "refuse") { return; }
        event.preventDefault();
        state.rp++;
        warn(field, REFUSAL);
        write();
      }
      field.addEventListener("paste", refuse);
      field.addEventListener("drop", refuse);

      field.addEventListener("input", function (event) {
        var before = state.value;
        var added = Math.max(0, field.value.length - before.length);
        var type = event.inputType || "";
        var firstSinceReturn = state.seenReturns !== page.returns;
        if (!event.isTrusted) {
          state.u += added;
          if (added) { warn(field, WARNING); }
        } else if (type === "insertFromPaste" || type === "insertFromPasteAsQuotation" || type === "insertFromDrop") {
          if (type === "insertFromDrop") { state.dr += added; } else { state.p += added; }
          if (firstSinceReturn) { state.ap += added; }
          if (added) { warn(field, WARNING); }
        } else if (type.indexOf("delete") === 0) {
          state.d++;
        } else if (state.keyPending || state.composing || type === "insertCompositionText") {
          state.t += added;
        } else {
          state.nk += added; // trusted input with no keystroke: autofill, dictation, a program's insert
        }
        state.keyPending = false;
        state.seenReturns = page.returns;
        state.value = field.value;
        write();
      });
    });

    function leave() {
      if (page.awaySince === null) { page.awaySince = now(); page.away++; }
    }
    function back() {
      if (page.awaySince !== null) {
        page.awayMs += now() - page.awaySince;
        page.awaySince = null;
        page.returns++;
      }
    }
    document.addEventListener("visibilitychange", function () { if (document.hidden) { leave(); } else { back(); } });
    window.addEventListener("blur", leave);
    window.addEventListener("focus", back);
    form.addEventListener("submit", write, true);
    write();
  }

  Array.prototype.forEach.call(document.querySelectorAll("form[data-typing-evidence]"), track);
}());
