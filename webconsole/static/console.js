// Pressroom review console: progressive enhancement only. Every page works without it.
// 1. The jobs table refreshes its rows in place (same-origin fetch of /jobs/rows).
// 2. Following a citation highlights its excerpt (the :target style does the rest).
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
})();
