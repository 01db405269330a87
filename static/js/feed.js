// The live feed: rows arrive over the htmx ws extension as out-of-band swaps; this adds pause,
// autoscroll, filters, an honest connection indicator and resuming after the last seq read.
(function () {
  var feed = document.getElementById("feed");
  if (!feed) return;
  var rows = document.getElementById("feed-rows"), state = document.getElementById("feed-state");
  var pause = document.getElementById("feed-pause"), agent = document.getElementById("feed-agent");
  var kind = document.getElementById("feed-kind");
  var paused = false, held = 0, stick = true, seen = 0;

  // The extension reconnects to the URL it first read; every (re)connect asks for what comes
  // after the cursor the last message set, so nothing is missed or doubled.
  htmx.createWebSocket = function (url) {
    var u = new URL(url, location.href);
    u.searchParams.set("after", document.getElementById("feed-cursor").dataset.seq || "0");
    var socket = new WebSocket(u.toString());
    socket.binaryType = htmx.config.wsBinaryType;
    return socket;
  };

  function show(s) { state.dataset.state = s; state.textContent = s; }
  function visible(row) {
    return !row.dataset.held && (!agent.value || row.dataset.agent === agent.value) &&
      (!kind.value || row.dataset.kind === kind.value);
  }
  function atBottom() { return rows.scrollHeight - rows.scrollTop - rows.clientHeight < 40; }
  function refilter() {
    var stay = atBottom();
    Array.prototype.forEach.call(rows.children, function (r) { r.hidden = !visible(r); });
    if (stay) rows.scrollTop = rows.scrollHeight;
  }

  feed.addEventListener("htmx:wsOpen", function () { show("live"); });
  feed.addEventListener("htmx:wsClose", function (e) {
    if (document.getElementById("feed-end").dataset.ended) return show("ended");
    show("reconnecting");
    // The extension retries abnormal closes itself; any other close of a live run is retried here.
    if ([1006, 1011, 1012, 1013].indexOf(e.detail.event.code) < 0) setTimeout(e.detail.socketWrapper.reconnect, 1000);
  });
  feed.addEventListener("htmx:wsBeforeMessage", function () { stick = atBottom(); });
  feed.addEventListener("htmx:wsAfterMessage", function () {
    for (; seen < rows.children.length; seen++) {
      var row = rows.children[seen];
      if (paused) { row.dataset.held = "1"; held++; }
      row.hidden = !visible(row);
      if (!agent.querySelector('option[value="' + CSS.escape(row.dataset.agent) + '"]')) agent.add(new Option(row.dataset.agent, row.dataset.agent));
    }
    if (paused) pause.textContent = "Resume (" + held + " new)";
    else if (stick) rows.scrollTop = rows.scrollHeight;
  });

  pause.addEventListener("click", function () {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume" : "Pause";
    if (!paused) {
      rows.querySelectorAll("[data-held]").forEach(function (r) { delete r.dataset.held; });
      held = 0;
      refilter();
      rows.scrollTop = rows.scrollHeight;
    }
  });
  agent.addEventListener("change", refilter);
  kind.addEventListener("change", refilter);
})();
