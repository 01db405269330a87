// The run header stays true on every tab: whenever the run moves, #run-frame (status, clocks,
// counts, actions) is read again from runs/<pk>/header/, at most once a second. The feed page's
// socket says when (feed.js calls ggRunHeader.refresh); other tabs open a socket without rows.
(function () {
  if (!document.getElementById("run-frame")) return;
  var timer = null, last = 0, ws = null, retry = 2000;

  function frame() { return document.getElementById("run-frame"); }
  function fetchFrame() {
    timer = null;
    last = Date.now();
    var u = new URL(frame().dataset.url, location.href);
    u.searchParams.set("next", location.pathname + location.search);
    fetch(u, {credentials: "same-origin"}).then(function (r) { return r.ok ? r.text() : null; }).then(function (html) {
      if (html === null) return;
      var t = document.createElement("template");
      t.innerHTML = html;
      var fresh = t.content.getElementById("run-frame");
      if (!fresh) return;
      frame().replaceWith(fresh);
      document.dispatchEvent(new CustomEvent("gg:run-header"));  // the feed's indicator reads the status
    }).catch(function () {});
  }
  function refresh() {
    if (!timer) timer = setTimeout(fetchFrame, Math.max(0, last + 1000 - Date.now()));
  }
  window.ggRunHeader = {refresh: refresh};
  // Clocks move and a silent run turns stale without any record arriving.
  setInterval(function () { if (frame().dataset.live === "1") refresh(); }, 15000);

  if (document.getElementById("feed") || frame().dataset.live !== "1") return;
  function connect() {
    var u = new URL(frame().dataset.socket, location.href);
    u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(u.toString());
    ws.onopen = function () { retry = 2000; };
    ws.onmessage = function (e) { if (e.data.indexOf("<!--") !== 0) refresh(); };
    ws.onclose = function (e) {
      refresh();
      if (e.code === 1000) return;  // the run ended
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 15000);
    };
  }
  connect();
})();
