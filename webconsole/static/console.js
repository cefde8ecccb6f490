// Pressroom review console: progressive enhancement only. Every page works without it.
// 1. The jobs table refreshes its rows in place (same-origin fetch of /jobs/rows).
// 2. Following a citation highlights its excerpt (the :target style does the rest).
// 3. A running job's page follows the job live: /jobs/{id}/events (server-sent events)
//    sends its status, stage, turn counter, tokens, cost and last calls, written into the
//    page as text (textContent, never markup); the stream ends when the job needs a human.
(function () {
  "use strict";
  var rows = document.getElementById("jobs-rows");
  if (rows && window.fetch) {
    var every = parseInt(rows.getAttribute("data-refresh-seconds"), 10) || 5;
    var url = rows.getAttribute("data-refresh");
    var refresh = function () {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html !== null) { rows.innerHTML = html; rows.setAttribute("data-refreshed", String(Date.now())); }
        })
        .catch(function () { /* the next tick tries again */ });
    };
    window.setInterval(refresh, every * 1000);
  }

  var live = document.getElementById("live");
  var events = live && live.getAttribute("data-events");
  if (events && window.EventSource) {
    var text = function (id, value) {
      var el = document.getElementById(id);
      if (el) { el.textContent = value === null || value === undefined ? "" : String(value); }
    };
    var show = function (state) {
      var badge = document.getElementById("job-status");
      if (badge) {
        badge.textContent = state.status_label;
        badge.className = "badge status-" + String(state.status).replace(/[^a-z_]/g, "");
      }
      text("job-stage", state.stage);
      text("job-turn", state.turn);
      if (state.turn_limit !== null) { text("job-turn-limit", state.turn_limit); }
      text("job-tokens", state.tokens || "—");
      text("job-cost", state.cost || "—");
      text("live-summary", state.summary);
      var list = document.getElementById("last-calls");
      if (list) {
        while (list.firstChild) { list.removeChild(list.firstChild); }
        (state.calls || []).forEach(function (line) {
          var item = document.createElement("li");
          item.textContent = line;
          list.appendChild(item);
        });
      }
      live.setAttribute("data-updated", String(Date.now()));
    };
    var source = new EventSource(events, { withCredentials: true });
    source.addEventListener("status", function (e) { show(JSON.parse(e.data)); });
    source.addEventListener("end", function () {
      source.close();
      var ended = document.getElementById("live-ended");
      if (ended) { ended.hidden = false; }
    });
    source.addEventListener("problem", function (e) {
      source.close();
      var problem = document.getElementById("live-problem");
      if (problem) { problem.textContent = JSON.parse(e.data).message; problem.hidden = false; }
    });
  }
})();
