// Live run page: swap in the steps fragment the server sends while the run is active.
(function () {
  "use strict";
  var root = document.querySelector("[data-live-url]");
  if (!root || !window.EventSource) { return; }
  var source = new EventSource(root.getAttribute("data-live-url"));
  source.addEventListener("run", function (message) {
    var update = JSON.parse(message.data);
    document.getElementById("steps").innerHTML = update.html;
    var status = document.getElementById("status");
    status.textContent = update.status;
    status.className = "status " + update.status;
  });
  source.onerror = function () { source.close(); };
})();
