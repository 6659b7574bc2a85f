// Live character counters: every textarea/input with data-max-chars gets "n / max characters" below it.
(function () {
  "use strict";
  var fields = document.querySelectorAll("[data-max-chars]");
  Array.prototype.forEach.call(fields, function (field) {
    var max = parseInt(field.getAttribute("data-max-chars"), 10);
    if (!max) { return; }
    var counter = document.createElement("span");
    counter.className = "char-counter muted";
    counter.setAttribute("aria-live", "polite");
    if (field.id) { counter.id = field.id + "-counter"; }
    field.insertAdjacentElement("afterend", counter);
    function update() {
      var used = field.value.length;
      counter.textContent = used + " / " + max + " characters";
      counter.classList.toggle("over", used > max);
      counter.classList.toggle("near", used <= max && used > max * 0.9);
    }
    field.addEventListener("input", update);
    update();
  });
}());
