// Live pages: swap in the fragments the server sends over server-sent events.
(function () {
  "use strict";
  if (!window.EventSource) { return; }

  // A run's page: its status and live part (steps, a network's state, child runs) while the
  // run is active; the server ends the stream when the run ends, so the page stops then.
  var run = document.querySelector("[data-live-url]");
  if (run) {
    var source = new EventSource(run.getAttribute("data-live-url"));
    source.addEventListener("run", function (message) {
      var update = JSON.parse(message.data);
      document.getElementById("steps").innerHTML = update.html;
      var status = document.getElementById("status");
      status.textContent = update.status;
      status.className = "status " + update.status;
    });
    source.onerror = function () { source.close(); };
  }

  // The run list: its rows, with the page's filters, each time they change. The server ends
  // the stream now and then; EventSource reconnects by itself.
  var list = document.querySelector("[data-live-list]");
  if (list) {
    var rows = new EventSource(list.getAttribute("data-live-list"));
    rows.addEventListener("runs", function (message) {
      document.getElementById("run-rows").innerHTML = JSON.parse(message.data).html;
    });
  }
})();
