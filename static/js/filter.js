// A search box that narrows a long page as you type: <input type="search" data-filter="SELECTOR">
// hides every element matching SELECTOR whose text does not contain the query (case-insensitive).
// An element with data-filter-text is matched on that text instead of its content. The count of
// what is shown goes into the element named by data-filter-count, if any; the elements matching
// data-filter-group are hidden while none of their items is shown. A live run page redraws itself
// every few seconds: the box is kept (hx-preserve) and the filter applied again to what arrived.
(function () {
  function apply(box) {
    var items = document.querySelectorAll(box.dataset.filter);
    var groups = box.dataset.filterGroup ? document.querySelectorAll(box.dataset.filterGroup) : [];
    var count = box.dataset.filterCount && document.getElementById(box.dataset.filterCount);
    var q = box.value.trim().toLowerCase(), shown = 0;
    items.forEach(function (el) {
      var text = (el.dataset.filterText || el.textContent).toLowerCase();
      el.hidden = q !== "" && text.indexOf(q) < 0;
      if (!el.hidden) shown++;
      if (q && !el.hidden && el.tagName === "DETAILS") el.open = true;
    });
    groups.forEach(function (g) {
      var any = Array.prototype.some.call(items, function (el) { return !el.hidden && g.contains(el); });
      g.hidden = q !== "" && !any;
    });
    if (count) count.textContent = q ? shown + " of " + items.length + " shown" : "";
  }
  function all() {
    document.querySelectorAll("input[data-filter]").forEach(function (box) { if (box.value) apply(box); });
  }
  document.addEventListener("input", function (e) {
    if (e.target.matches && e.target.matches("input[data-filter]")) apply(e.target);
  });
  document.addEventListener("htmx:afterSettle", all);
  all();
})();
