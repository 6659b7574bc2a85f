// How each sentence was written (docs/quality.md, "How hypotheses were written").
// <form data-typing-evidence="record|warn|refuse|hold"> with <input type=hidden name=typing_evidence>:
// for every text field of the form this counts keystrokes, deletions and, of the text that is
// sent, the characters that arrived by typing, paste, drop, untrusted (synthetic) events, a script
// setting the value, or trusted input with no keystroke; the time to the first key, the time spent typing and the mean,
// coefficient of variation and skewness of the intervals between keys; and, for the page, how often and
// how long the participant was in another tab or window. Never a key or a text: only numbers,
// posted with the form. "warn" tells the participant at once; "refuse" also stops pastes and drops.
(function () {
  "use strict";
  var PAUSE_MS = 2000; // a longer gap between keys is thinking, not typing: not an interval
  var WARNING = "Please type your own sentences: this study measures how sentences are typed (never what you type).";
  var REFUSAL = "Pasting is turned off in this study: please type your own sentence.";

  function now() { return Math.round(window.performance.now()); }

  // Each character of a field keeps a tag for the way it arrived, so the counts describe the text
  // that is sent (a pasted sentence deleted and typed again counts as typed):
  // t typed, p pasted, d dropped, P / D pasted / dropped as the first input after coming back from
  // another tab, u untrusted event, s set by a script, n trusted input with no keystroke, f prefilled.
  var TAGS = { t: "t", p: "p", P: "p", d: "dr", D: "dr", u: "u", s: "s", n: "nk", f: "pre" };

  // Replace the tags of the characters that changed from `before` to `after` (same start and end
  // kept) with `tag`; returns how many characters arrived.
  function retag(origin, before, after, tag) {
    var start = 0;
    var limit = Math.min(before.length, after.length);
    while (start < limit && before[start] === after[start]) { start++; }
    var end = 0;
    while (end < limit - start && before[before.length - 1 - end] === after[after.length - 1 - end]) { end++; }
    var added = after.length - start - end;
    var args = [start, before.length - start - end];
    for (var i = 0; i < added; i++) { args.push(tag); }
    Array.prototype.splice.apply(origin, args);
    return added;
  }

  function tagsFrom(old, length) {
    // A page sent back (a refused submit): the first page's counts, in order, if they add up.
    var origin = [];
    var ap = old.ap || 0;
    [["t", old.t], ["p", old.p], ["d", old.dr], ["u", old.u], ["s", old.s], ["n", old.nk], ["f", old.pre]].forEach(function (pair) {
      for (var i = 0; i < (pair[1] || 0) && origin.length <= length; i++) {
        var tag = pair[0];
        if ((tag === "p" || tag === "d") && ap > 0) { tag = tag.toUpperCase(); ap--; }
        origin.push(tag);
      }
    });
    if (origin.length !== length) { origin = []; for (var j = 0; j < length; j++) { origin.push("f"); } }
    return origin;
  }

  // A form with a draft (static/js/worker.js restores its text after a reload) keeps its counts in
  // localStorage beside the draft, with a hash of each field's text (never the text): a restored
  // sentence keeps the way it arrived instead of counting as prefilled.
  var STORE_PREFIX = "nli-typing:";
  var STORE_MAX_AGE_MS = 3 * 24 * 3600 * 1000;

  function storage() {
    try { return window.localStorage; } catch (error) { return null; }
  }

  function textHash(text) {
    var hash = 5381;
    for (var i = 0; i < text.length; i++) { hash = ((hash << 5) + hash + text.charCodeAt(i)) | 0; }
    return hash;
  }

  function dropOldCounts(store) {
    for (var i = store.length - 1; i >= 0; i--) {
      var name = store.key(i);
      if (!name || name.indexOf(STORE_PREFIX) !== 0) { continue; }
      try {
        if (Date.now() - JSON.parse(store.getItem(name)).at > STORE_MAX_AGE_MS) { store.removeItem(name); }
      } catch (error) { store.removeItem(name); }
    }
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
    var store = form.dataset.draftKey ? storage() : null;
    var storeKey = STORE_PREFIX + (form.dataset.draftKey || "");
    var kept = {};
    if (store) {
      dropOldCounts(store);
      try { kept = (JSON.parse(store.getItem(storeKey) || "{}").fields) || {}; } catch (error) { kept = {}; }
    }

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
      var stored = kept[field.name];
      if (!old && stored && typeof stored === "object" && stored.h === textHash(field.value)) { old = stored; }
      var state = {
        k: 0, d: 0, rp: 0, fk: null, tt: 0, n: 0, sum: 0, sq: 0, cube: 0,
        lastKey: null, keyPending: false, composing: false, value: field.value, seenReturns: page.returns,
        origin: tagsFrom({}, field.value.length)
      };
      if (old && typeof old === "object" && old.len === field.value.length) {
        // Keep what the first page counted: its keys, its intervals (sum and sum of squares from mean and CV).
        ["k", "d", "rp", "fk", "tt", "n"].forEach(function (key) { if (typeof old[key] === "number") { state[key] = old[key]; } });
        var mean = old.m || 0;
        state.sum = mean * state.n;
        state.sq = state.n > 1 ? Math.pow((old.cv || 0) * mean, 2) * (state.n - 1) + state.n * mean * mean : state.sum * mean;
        // The sum of cubes back from the skewness (sk = third central moment / sd^3, population form).
        var popVar = state.n > 0 ? state.sq / state.n - mean * mean : 0;
        var third = (old.sk || 0) * Math.pow(Math.max(0, popVar), 1.5);
        state.cube = state.n * (third + 3 * mean * (popVar + mean * mean) - 2 * Math.pow(mean, 3));
        if (!isFinite(state.cube)) { state.cube = state.n * Math.pow(mean, 3); }
        state.origin = tagsFrom(old, field.value.length);
      }
      return state;
    }

    function noticeScript(field, state) {
      if (field.value !== state.value) {
        var changed = retag(state.origin, state.value, field.value, "s");
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
        var counts = { t: 0, p: 0, dr: 0, u: 0, s: 0, nk: 0, pre: 0, ap: 0 };
        state.origin.forEach(function (tag) {
          counts[TAGS[tag]]++;
          if (tag === "P" || tag === "D") { counts.ap++; }
        });
        var mean = state.n ? state.sum / state.n : null;
        var variance = state.n > 1 ? Math.max(0, (state.sq - state.n * mean * mean) / (state.n - 1)) : null;
        // The intervals' skewness (the shape of their spread: people's have a long right tail).
        var skew = null;
        if (state.n > 2) {
          var popVariance = state.sq / state.n - mean * mean;
          var thirdMoment = state.cube / state.n - 3 * mean * state.sq / state.n + 2 * Math.pow(mean, 3);
          if (popVariance > 0) { skew = Math.round(1000 * thirdMoment / Math.pow(popVariance, 1.5)) / 1000; }
        }
        fields[name] = {
          k: state.k, d: state.d, t: counts.t, p: counts.p, dr: counts.dr, u: counts.u, s: counts.s, nk: counts.nk,
          pre: counts.pre, ap: counts.ap, rp: state.rp, fk: state.fk, tt: Math.round(state.tt), n: state.n,
          m: mean === null ? null : Math.round(mean * 10) / 10,
          cv: variance === null || !mean ? null : Math.round(1000 * Math.sqrt(variance) / mean) / 1000,
          sk: skew,
          len: field ? field.value.length : 0
        };
      });
      output.value = JSON.stringify({ v: 1, open: now() - openedAt, away: page.away, awayMs: page.awayMs, fields: fields });
      if (store) {
        var saved = {};
        Object.keys(fields).forEach(function (name) {
          var field = form.elements[name];
          saved[name] = Object.assign({ h: textHash(field ? field.value : "") }, fields[name]);
        });
        try { store.setItem(storeKey, JSON.stringify({ at: Date.now(), fields: saved })); } catch (error) { /* full: no copy */ }
      }
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
          state.n++; state.sum += gap; state.sq += gap * gap; state.cube += gap * gap * gap; state.tt += gap;
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
        var type = event.inputType || "";
        var firstSinceReturn = state.seenReturns !== page.returns;
        var tag;
        if (!event.isTrusted) {
          tag = "u";
        } else if (type === "insertFromPaste" || type === "insertFromPasteAsQuotation") {
          tag = firstSinceReturn ? "P" : "p";
        } else if (type === "insertFromDrop") {
          tag = firstSinceReturn ? "D" : "d";
        } else if (state.keyPending || state.composing || type === "insertCompositionText") {
          tag = "t";
        } else {
          tag = "n"; // trusted input with no keystroke: autofill, dictation, a program's insert
        }
        if (type.indexOf("delete") === 0) { state.d++; }
        var added = retag(state.origin, state.value, field.value, tag);
        if (added && "uPpDd".indexOf(tag) >= 0) { warn(field, WARNING); }
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

  function start() { Array.prototype.forEach.call(document.querySelectorAll("form[data-typing-evidence]"), track); }
  // After worker.js (loaded before this script) has put a draft back on DOMContentLoaded: the
  // restored text is then the page's starting text, not a script's change.
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
}());
