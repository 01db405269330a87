// Forms marked data-busy="…": once sent, their submit button says so and is disabled, and their
// [data-busy-note] shows (a big import holds the page for minutes; a second click would send it again).
// A page the browser brings back from its cache (Back) is ready again.
document.addEventListener("submit", function (e) {
  var form = e.target;
  if (e.defaultPrevented || !form.dataset.busy) return;
  var button = form.querySelector("button[type=submit]");
  if (button) {
    button.dataset.idle = button.textContent;
    button.disabled = true;
    button.textContent = form.dataset.busy;
  }
  var note = form.querySelector("[data-busy-note]");
  if (note) note.hidden = false;
});
window.addEventListener("pageshow", function (e) {
  if (!e.persisted) return;
  document.querySelectorAll("form[data-busy] button[data-idle]").forEach(function (button) {
    button.disabled = false;
    button.textContent = button.dataset.idle;
  });
  document.querySelectorAll("form[data-busy] [data-busy-note]").forEach(function (note) { note.hidden = true; });
});
