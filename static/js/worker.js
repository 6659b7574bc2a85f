// What every worker page shares: times in the worker's own clock (a claim's hold counts down in
// hold.js), and drafts kept in the browser until the server has confirmed the save.
(function () {
  "use strict";

  // <time data-local datetime="ISO">14:05 UTC</time> -> the same moment in the worker's time zone.
  function localTimes() {
    document.querySelectorAll("time[data-local]").forEach(function (element) {
      var when = new Date(element.getAttribute("datetime"));
      if (isNaN(when)) { return; }
      element.textContent = when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      element.title = when.toString();
    });
  }

  // <form data-draft-key="..."> : its text fields and radio choices are kept in localStorage while
  // the worker types, restored after a reload, the back button or a failed request, and dropped once
  // a page says the server saved them (<body data-saved-drafts="key1 key2">).
  var PREFIX = "nli-draft:";
  var MAX_AGE_MS = 3 * 24 * 3600 * 1000;

  function storage() {
    try { return window.localStorage; } catch (error) { return null; }
  }

  function dropSavedAndOld(store) {
    var saved = (document.body.dataset.savedDrafts || "").split(/\s+/).filter(Boolean);
    saved.forEach(function (key) { store.removeItem(PREFIX + key); });
    for (var i = store.length - 1; i >= 0; i--) {
      var name = store.key(i);
      if (!name || name.indexOf(PREFIX) !== 0) { continue; }
      try {
        if (Date.now() - JSON.parse(store.getItem(name)).at > MAX_AGE_MS) { store.removeItem(name); }
      } catch (error) { store.removeItem(name); }
    }
  }

  function fields(form) {
    return Array.prototype.slice.call(form.querySelectorAll("textarea[name], input[type=text][name], input[type=radio][name]"));
  }

  function keepDraft(form, store) {
    var key = PREFIX + form.dataset.draftKey;
    var values = {};
    fields(form).forEach(function (field) {
      if (field.type === "radio") { if (field.checked) { values[field.name] = field.value; } }
      else if (field.value) { values[field.name] = field.value; }
    });
    store.setItem(key, JSON.stringify({ at: Date.now(), values: values }));
  }

  function restoreDraft(form, store) {
    var raw = store.getItem(PREFIX + form.dataset.draftKey);
    if (!raw) { return false; }
    var values;
    try { values = JSON.parse(raw).values || {}; } catch (error) { return false; }
    var restored = false;
    fields(form).forEach(function (field) {
      if (!(field.name in values)) { return; }
      if (field.type === "radio") {
        // What the server sent back (an error page) wins over the browser's copy.
        var group = form.querySelectorAll('input[type=radio][name="' + field.name + '"]:checked');
        if (!group.length && field.value === values[field.name]) { field.checked = true; restored = true; }
      } else if (!field.value) {
        field.value = values[field.name];
        restored = true;
      }
    });
    return restored;
  }

  function drafts() {
    var store = storage();
    if (!store) { return; }
    dropSavedAndOld(store);
    document.querySelectorAll("form[data-draft-key]").forEach(function (form) {
      if (restoreDraft(form, store)) {
        form.dispatchEvent(new CustomEvent("draft-restored", { bubbles: true }));
        var note = form.querySelector("[data-draft-note]");
        if (note) { note.hidden = false; }
      }
      form.addEventListener("input", function () { keepDraft(form, store); });
      form.addEventListener("change", function () { keepDraft(form, store); });
    });
  }

  // <button data-copy="#selector"> copies that element's text (the completion code).
  function copyButtons() {
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () {
        var source = document.querySelector(button.dataset.copy);
        if (!source || !navigator.clipboard) { return; }
        navigator.clipboard.writeText(source.textContent.trim()).then(function () {
          button.textContent = button.dataset.copiedText || "Copied";
        });
      });
    });
  }

  // A refused submit comes back as a page that opens at the top; on a phone its error can sit
  // thousands of pixels below, and focus would be on <body>. Bring the first problem into view
  // and give it the focus: the field the server marked invalid, else the page's error message.
  function revealErrors() {
    var alert = document.querySelector("main .message.error[role=alert], main .errorlist[role=alert]");
    var invalid = document.querySelector("main [aria-invalid=true]");
    if (!invalid && alert && alert.id) {  // a field that names the error as its description
      invalid = document.querySelector('main [aria-describedby~="' + alert.id + '"]');
    }
    var target = invalid || alert;
    if (!target) { return; }
    if (!invalid) { target.setAttribute("tabindex", "-1"); }
    target.scrollIntoView({ block: "center" });
    target.focus({ preventScroll: true });
  }

  function start() { localTimes(); drafts(); copyButtons(); revealErrors(); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
