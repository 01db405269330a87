// A live run page re-reads itself every 3 s (templates/runs/run_page.html): the <details> the
// operator opened or closed keep their state across the swap. A details is known by its id, else
// its data-* attributes (Refusals: data-agent, data-operation), else its summary's text, under the
// details it sits in.
(function () {
  var held = null;
  function key(d) {
    var own = d.id || Object.keys(d.dataset).sort().map(function (k) { return k + "=" + d.dataset[k]; }).join("&");
    if (!own) { var s = d.querySelector(":scope > summary"); own = s ? s.textContent.trim() : ""; }
    var outer = d.parentElement && d.parentElement.closest("details");
    return (outer ? key(outer) + " / " : "") + own;
  }
  function page(e) { var t = e.detail && e.detail.target; return t && t.id === "run-page"; }
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (!page(e)) return;
    held = {};
    e.detail.target.querySelectorAll("details").forEach(function (d) { held[key(d)] = d.open; });
  });
  document.addEventListener("htmx:afterSettle", function () {
    var root = document.getElementById("run-page");
    if (!held || !root) return;
    root.querySelectorAll("details").forEach(function (d) {
      var k = key(d);
      if (Object.prototype.hasOwnProperty.call(held, k) && d.open !== held[k]) d.open = held[k];
    });
    held = null;
  });
})();
