// Keyboard shortcuts, listed in the `?` dialog: `/` search, `j`/`k` feed rows, `g` + a letter
// for the links marked data-shortcut (run tabs, top bar), Esc pauses the live feed.
// Keys typed into a field are the field's; nothing here fires with Ctrl, Alt or Meta held.
(function () {
  var dialog = document.getElementById("shortcuts");
  if (!dialog) return;
  var pendingG = false, gTimer = null;

  function links() { return document.querySelectorAll("a[data-shortcut]"); }
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function rows() {
    return Array.prototype.filter.call(document.querySelectorAll(".feed-row"), function (r) { return !r.hidden; });
  }
  function step(delta) {
    var all = rows();
    if (!all.length) return;
    var at = all.indexOf(document.querySelector(".feed-row.kbd-current"));
    var next = all[Math.max(0, Math.min(all.length - 1, at < 0 ? (delta > 0 ? 0 : all.length - 1) : at + delta))];
    all.forEach(function (r) { r.classList.remove("kbd-current"); });
    next.classList.add("kbd-current");
    next.scrollIntoView({ block: "nearest" });
    var open = next.querySelector("a.feed-open");  // so Enter opens the row's record
    if (open) open.focus({ preventScroll: true });
  }
  function listLinks() {
    var body = document.getElementById("shortcut-links");
    body.textContent = "";
    Array.prototype.forEach.call(links(), function (a) {
      var tr = body.insertRow(), keys = tr.insertCell(), what = tr.insertCell();
      keys.innerHTML = "<kbd>g</kbd> <kbd></kbd>";
      keys.lastChild.textContent = a.dataset.shortcut;
      what.textContent = a.textContent.replace(/\s+\d+\s*$/, "").trim();
    });
  }
  function open() { listLinks(); if (!dialog.open) dialog.showModal(); }

  document.querySelectorAll("[data-open-shortcuts]").forEach(function (b) { b.addEventListener("click", open); });
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || dialog.open) return;
    if (typing(e.target)) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if (pendingG) {
      pendingG = false;
      clearTimeout(gTimer);
      var target = Array.prototype.find.call(links(), function (a) { return a.dataset.shortcut === e.key; });
      if (target) { e.preventDefault(); target.click(); }
      return;
    }
    if (e.key === "/") {
      var search = document.querySelector("input[type=search]");
      if (search) { e.preventDefault(); search.focus(); search.select(); }
    } else if (e.key === "j" || e.key === "k") {
      step(e.key === "j" ? 1 : -1);
    } else if (e.key === "g") {
      pendingG = true;
      gTimer = setTimeout(function () { pendingG = false; }, 1500);
    } else if (e.key === "Escape") {
      var pause = document.getElementById("feed-pause");
      if (pause && pause.getAttribute("aria-pressed") !== "true") pause.click();
    } else if (e.key === "?") {
      e.preventDefault();
      open();
    }
  });
})();
