// The feed's window: at most data-window rows in the DOM, whatever the run's size. The socket
// follows the tail (runs/feed/consumer.py); older rows, newer rows after scrolling back, and jumps
// are read over HTTP by seq (runs/feed/history.py). Filters live in the URL and the server applies
// them. Rows keep the class `feed-row`; #feed-pause is the pause control (keyboard shortcuts use both).
(function () {
  var feed = document.getElementById("feed");
  if (!feed) return;
  var rows = document.getElementById("feed-rows"), state = document.getElementById("feed-state");
  var pause = document.getElementById("feed-pause"), note = document.getElementById("feed-note");
  var endNote = document.getElementById("feed-end"), filters = document.getElementById("feed-filters");
  var MAX = Number(feed.dataset.window) || 250;
  var rowsUrl = new URL(feed.dataset.rowsUrl, location.href);
  var lo = 0, hi = 0;               // rows before lo / after hi are not in the window
  var moreBefore = false, moreAfter = false;
  var following = false, waitEpoch = null, epoch = 0;
  var live = feed.dataset.live === "1", ended = null;
  var ws = null, opened = false, retry = 1000, loading = 0, paused = false, held = 0, drops = 0;

  function header() { if (window.ggRunHeader) window.ggRunHeader.refresh(); }
  // The header is read again whenever the run moves (at most once a second), and once when it ends:
  // so are the controls' lists and the footer's counts, which grow with a live run.
  var controlsRead = false;
  document.addEventListener("gg:run-header", function () {
    settle();
    if (live || (ended && !controlsRead)) controls();
  });
  function controls() {
    controlsRead = !live;
    fetch(feed.dataset.controlsUrl, {credentials: "same-origin"}).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (html === null) return;
      var fresh = parse(html);
      ["feed-agent", "feed-ops", "feed-failure", "feed-count"].forEach(function (id) {
        var now = document.getElementById(id), next = fresh.getElementById(id);
        if (!now || !next || now === document.activeElement) return;  // never under the operator's hand
        if (next.tagName === now.tagName && "value" in now) next.value = now.value;  // a choice not yet applied
        if (next.tagName === "SELECT" && next.selectedIndex < 0) next.selectedIndex = 0;
        now.replaceWith(next);
      });
      var failure = document.getElementById("feed-failure");
      failure.parentNode.hidden = failure.options.length < 2;
    }).catch(function () {});
  }
  function show(s, text) { state.dataset.state = s; state.textContent = text || s; }
  function settle() {
    if (loading) return show("loading", "loading history");
    if (ended) return show(ended.status === "interrupted" ? "interrupted" : "ended",
      ended.status === "interrupted" ? "interrupted" + (ended.reason ? " — " + ended.reason : "") : "ended (" + ended.status + ")");
    if (ws && ws.readyState === WebSocket.OPEN) {
      // Connected, but the run has sent nothing for a while: the header says since when.
      var status = document.getElementById("run-status");
      if (status && status.textContent.trim() === "stale") return show("stale", "connected — no record for a while");
      return show("live", following ? "live" : "live (reading back)");
    }
    if (!opened) return show("loading", "loading history");  // the first connect, not a reconnect
    show("reconnecting", "reconnecting");
  }
  function end(status, reason) {
    ended = {status: status, reason: reason || ""};
    live = false;
    endNote.textContent = "The run has ended (" + status + (reason ? ": " + reason : "") + ")" +
      (moreAfter ? "." : "; every stored record has been read.");
    endNote.dataset.ended = "1";
    settle();
    header();
  }
  function parse(html) { var t = document.createElement("template"); t.innerHTML = html; return t.content; }
  function seqOf(row) { return Number(row.dataset.seq); }
  function atBottom() { return rows.scrollHeight - rows.scrollTop - rows.clientHeight < 40; }
  // Whether the operator stays at the bottom: rows growing once laid out (content-visibility) move
  // the bottom away without anyone scrolling, so only a scroll up from where the page put it unpins.
  var pinned = true, setTop = 0;
  function toBottom() { rows.scrollTop = rows.scrollHeight; setTop = rows.scrollTop; pinned = true; }

  // Trim the window back to MAX rows from one end, keeping what the operator looks at in place.
  // Following at the bottom, only the tail is kept (TAIL rows: a screenful and more): at 1,000
  // events a second the DOM stays small, and scrolling up reads the rest back by seq.
  var TAIL = Math.min(MAX, Math.max(50, Math.ceil(MAX / 2)));
  function cut(from, to) {  // one removal (one mutation), whatever the number of rows
    var r = document.createRange();
    r.setStartBefore(from); r.setEndAfter(to); r.deleteContents(); r.detach();
  }
  function trimTop(stick) {
    var keep = stick && following ? TAIL : MAX, n = rows.children.length - keep;
    if (n <= 0) return;
    var before = stick ? 0 : rows.scrollHeight;  // at the bottom nothing needs holding in place
    cut(rows.firstElementChild, rows.children[n - 1]);
    if (!stick) rows.scrollTop -= before - rows.scrollHeight;
    lo = seqOf(rows.firstElementChild);
    moreBefore = true;
  }
  function trimBottom() {
    var n = rows.children.length;
    if (n <= MAX) return;
    cut(rows.children[MAX], rows.lastElementChild);
    hi = seqOf(rows.lastElementChild);
    moreAfter = true;
    if (following) detach();
  }

  function send(message) { if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message)); }
  function detach() { following = false; waitEpoch = null; send({follow: false, epoch: ++epoch}); }
  function attach() {
    moreAfter = false;
    following = true;
    waitEpoch = ++epoch;
    if (ws && ws.readyState === WebSocket.OPEN) send({follow: hi, epoch: waitEpoch});
    else waitEpoch = null;  // the next connect asks from hi itself
  }

  function connect() {
    if (!live) return;
    var u = new URL(feed.dataset.socket, location.href);
    u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    u.searchParams.set("after", String(hi));
    if (!following) u.searchParams.set("rows", "0");
    ws = new WebSocket(u.toString());
    waitEpoch = null;
    ws.onopen = function () { opened = true; retry = 1000; settle(); header(); };
    ws.onmessage = function (e) { receive(e.data); };
    ws.onclose = function (e) {
      ws = null;
      opened = true;  // from now on a closed socket is a reconnect
      if (ended || !live) return;
      if (e.code !== 1000) state.dataset.drops = String(++drops);
      settle();
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 10000);
    };
  }

  function receive(data) {
    var frag = parse(data);
    var mark = frag.getElementById("feed-follow");
    if (mark) { if (Number(mark.dataset.epoch) === waitEpoch) waitEpoch = null; return; }
    var fin = frag.getElementById("feed-end");
    if (fin) return end(fin.dataset.status || "ended", fin.dataset.reason);
    var rung = frag.getElementById("feed-rung");
    if (rung) { header(); if (!following) note.textContent = "newer records below"; return; }
    var cursor = frag.getElementById("feed-cursor");
    if (!cursor) return;  // a heartbeat
    var upto = Number(cursor.dataset.seq);
    send({ack: upto});
    if (!following || waitEpoch !== null || upto <= hi) return;
    var stick = !paused && (pinned || atBottom()), added = document.createDocumentFragment();
    var fresh = Array.prototype.slice.call(frag.querySelectorAll(".feed-row"));
    // At the bottom, rows the tail window would drop at once are never inserted at all.
    if (stick && fresh.length > TAIL) { fresh = fresh.slice(-TAIL); lo = seqOf(fresh[0]); moreBefore = true; }
    fresh.forEach(function (row) {
      if (seqOf(row) <= hi) return;
      if (paused) { row.hidden = true; row.dataset.held = "1"; held++; }
      added.appendChild(row);
    });
    hi = upto;
    if (added.childNodes.length) {
      rows.appendChild(added);  // one insertion, one layout
      note.textContent = "";
      trimTop(stick);
      if (paused) pause.textContent = "Resume (" + held + " new)";
      else if (stick) toBottom();
      header();
    }
  }

  // A page of rows over HTTP (params on top of the filter in the URL), handed to `use`; the
  // indicator says "loading history" until it is in the window. A read that opens the window
  // (`again`: the first one, a jump, the end) is tried again while the server cannot answer it (it
  // is restarting, or failed), the note saying why: a feed whose first read failed would otherwise
  // never open its socket. Scrolling reads only say so (the next scroll asks again). A read the
  // server refuses (no such turn, not a time) hands its message to `refused` when given.
  function page(params, use, again, refused) {
    var u = new URL(rowsUrl);
    Object.keys(params).forEach(function (k) { u.searchParams.set(k, params[k]); });
    loading++;
    settle();
    fetch(u, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (r) {
        return r.json().catch(function () { return null; }).then(function (body) {
          if (r.ok && body) return body;
          var err = new Error((body && body.error) || (r.ok ? "Reading rows failed: the answer was not rows (signed out? reload the page)."
            : "Reading rows failed: the server answered " + r.status + " " + r.statusText + "."));
          err.again = r.status >= 500;
          throw err;
        });
      }, function () { var err = new Error("Reading rows failed: the server did not answer."); err.again = true; throw err; })
      .then(function (body) { note.textContent = ""; use(body); })
      .catch(function (err) {
        var retry = again && err.again;
        note.textContent = err.message + (retry ? " Trying again in 2 s." : "");
        if (retry) setTimeout(function () { page(params, use, again, refused); }, 2000);
        else if (refused) refused(err.message);
      })
      .finally(function () { loading--; settle(); });
  }
  function fill(p) {
    rows.textContent = "";
    rows.appendChild(parse(p.html));
    lo = p.lo; hi = p.hi; moreBefore = p.more_before; moreAfter = p.more_after;
    note.textContent = p.rows ? "" : rowsUrl.search ? "No rows match here." : "No rows yet.";
  }
  function start(p, toTop) {
    fill(p);
    if (p.status !== "queued" && p.status !== "running") { live = false; end(p.status, feed.dataset.reason); }
    else if (!moreAfter) { following = true; if (!ws) connect(); else attach(); }
    else { if (following) detach(); if (!ws) connect(); }
    if (toTop) { rows.scrollTop = 0; pinned = false; } else toBottom();
  }

  function older() {
    if (loading || !moreBefore) return;
    page({before: lo}, function (p) {
      var before = rows.scrollHeight;
      rows.insertBefore(parse(p.html), rows.firstChild);
      rows.scrollTop += rows.scrollHeight - before;
      lo = p.lo; moreBefore = p.more_before;
      trimBottom();
    });
  }
  function newer() {
    if (loading || following || !moreAfter) return;
    page({after: hi}, function (p) {
      rows.appendChild(parse(p.html));
      hi = p.hi;
      trimTop();
      if (!p.more_after) { note.textContent = ""; if (live) attach(); else { moreAfter = false; if (ended) end(ended.status, ended.reason); } }
    });
  }
  rows.addEventListener("scroll", function () {
    if (rows.scrollTop < setTop - 40) pinned = false;
    else if (atBottom()) { pinned = true; setTop = rows.scrollTop; }
    if (rows.scrollTop < 400) older();
    else if (rows.scrollHeight - rows.scrollTop - rows.clientHeight < 400) newer();
  }, {passive: true});

  pause.addEventListener("click", function () {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume" : "Pause";
    if (!paused) {
      rows.querySelectorAll("[data-held]").forEach(function (r) { r.hidden = false; delete r.dataset.held; });
      held = 0;
      toBottom();
    }
  });
  // A filter change is a new URL: the server filters, the view can be shared. (Listened for on the
  // form: the agent and failure lists are replaced as a live run grows.)
  var SUBMITS = ["feed-agent", "feed-kind", "feed-failed", "feed-failure"];
  filters.addEventListener("change", function (e) {
    if (SUBMITS.indexOf(e.target.id) >= 0) filters.requestSubmit();
  });
  document.getElementById("feed-jump").addEventListener("submit", function (e) {
    e.preventDefault();
    var to = document.getElementById("feed-jump-to").value.trim(), m, params;
    if ((m = /^(?:turn|t)\s*(\d+)$/i.exec(to))) params = {turn: m[1]};
    else if ((m = /^(?:seq|#)?\s*(\d+)$/i.exec(to))) params = {seq: m[1]};
    else if (/^\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?$|T/.test(to)) params = {time: to};
    else { note.textContent = "Jump to a seq (1200), a turn (turn 5) or a time (12:03:04)."; return; }
    page(params, function (p) { start(p, true); }, true);
  });
  document.getElementById("feed-to-end").addEventListener("click", function () {
    page({}, function (p) { start(p, false); }, true);
  });

  var at = JSON.parse(document.getElementById("feed-jump-at").textContent);
  if (Object.keys(at).length) {
    page(at, function (p) {
      start(p, true);
      var target = rows.firstElementChild;
      if (target && at.seq && seqOf(target) === Number(at.seq)) target.classList.add("feed-target");
    }, true, function (message) {  // an address to nowhere still opens the feed, at its end
      page({}, function (p) { start(p, false); note.textContent = message + " Showing the end of the run."; }, true);
    });
  } else {
    page({}, function (p) { start(p, false); }, true);
  }
})();
