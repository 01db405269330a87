// A live run page re-reads itself every 3 s (templates/runs/run_page.html). What the operator did
// survives the swap:
// * the <details> opened or closed keep their state. A details is known by its id, else its data-*
//   attributes (Refusals: data-agent, data-operation), else its summary's text, under the details it
//   sits in;
// * a table paged on with "Show more" (a button in a tr.more) keeps the rows it loaded: the fresh page
//   lists only each group's first rows. Its own "Show more" row stays (its cursor is a seq, still
//   good); a table read to its end whose count grew since gets the fresh "Show more" row, after the
//   last row loaded; the "… and n more" it says counts from the rows loaded.
(function () {
  var held = null;
  function key(d) {
    var own = d.id || Object.keys(d.dataset).sort().map(function (k) { return k + "=" + d.dataset[k]; }).join("&");
    if (!own) { var s = d.querySelector(":scope > summary"); own = s ? s.textContent.trim() : ""; }
    var outer = d.parentElement && d.parentElement.closest("details");
    return (outer ? key(outer) + " / " : "") + own;
  }
  function page(e) { var t = e.detail && e.detail.target; return t && t.id === "run-page"; }
  function count(d) { var b = d.querySelector(":scope > summary .count"); return b ? parseInt(b.textContent, 10) : 0; }

  document.addEventListener("htmx:beforeRequest", function (e) {
    var more = e.detail.elt.closest && e.detail.elt.closest("tr.more");
    var d = more && more.closest("details");
    if (d) d.classList.add("paged");
  });
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (!page(e)) return;
    held = {open: {}, paged: {}};
    e.detail.target.querySelectorAll("details").forEach(function (d) {
      held.open[key(d)] = d.open;
      var body = d.classList.contains("paged") && d.querySelector("tbody");
      if (body) held.paged[key(d)] = {rows: body.innerHTML, count: count(d), ended: !body.querySelector("tr.more")};
    });
  });
  document.addEventListener("htmx:afterSettle", function () {
    var root = document.getElementById("run-page");
    if (!held || !root) return;
    root.querySelectorAll("details").forEach(function (d) {
      var k = key(d), paged = held.paged[k], body = d.querySelector("tbody");
      if (Object.prototype.hasOwnProperty.call(held.open, k) && d.open !== held.open[k]) d.open = held.open[k];
      if (!paged || !body) return;
      var fresh = body.querySelector("tr.more");
      body.innerHTML = paged.rows;
      var last = body.querySelectorAll("tr[data-after]");
      if (paged.ended && fresh && count(d) > paged.count && last.length) {
        var button = fresh.querySelector("button[hx-get]");
        button.setAttribute("hx-get", button.getAttribute("hx-get").replace(/after=\d+/, "after=" + last[last.length - 1].dataset.after));
        body.appendChild(fresh);
      }
      var more = body.querySelector("tr.more td"), left = count(d) - last.length;
      if (more && more.firstChild && more.firstChild.nodeType === Node.TEXT_NODE && left > 0)
        more.firstChild.nodeValue = "… and " + left + " more of this call, counted above. ";
      d.classList.add("paged");
      htmx.process(body);
    });
    held = null;
  });
})();
