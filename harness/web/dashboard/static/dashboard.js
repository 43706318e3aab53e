// Live pages: swap in the fragments the server sends over server-sent events.
//
// Every event carries the whole fragment, not a change, and the server sends the current
// fragment first on each connection; so when a stream drops (a proxy's idle timeout, a
// restarted web process) the browser's own reconnect, after the `retry:` delay the server
// sets, brings back everything missed. A stream the server ends on purpose says `end`.
(function () {
  "use strict";
  if (!window.EventSource) { return; }

  function follow(url, handlers) {
    var source = new EventSource(url);
    Object.keys(handlers).forEach(function (name) {
      source.addEventListener(name, function (message) { handlers[name](message, source); });
    });
    source.addEventListener("end", function () { source.close(); });
    return source;
  }

  // A run's page: its status and live part (waterfall, steps, a network's state, child
  // runs) while the run is active; `end` once it has ended.
  var run = document.querySelector("[data-live-url]");
  if (run) {
    follow(run.getAttribute("data-live-url"), {
      run: function (message) {
        var update = JSON.parse(message.data);
        document.getElementById("steps").innerHTML = update.html;
        var status = document.getElementById("status");
        status.textContent = update.status;
        status.className = "status " + update.status;
      }
    });
  }

  // The run list: its rows, with the page's query, each time they change. The server ends
  // the stream now and then; EventSource reconnects by itself.
  var list = document.querySelector("[data-live-list]");
  if (list) {
    follow(list.getAttribute("data-live-list"), {
      runs: function (message) {
        document.getElementById("run-rows").innerHTML = JSON.parse(message.data).html;
      }
    });
  }

  // A conversation: its transcript each time it grows. Folded tool calls a person opened
  // stay open across updates.
  var chat = document.querySelector("[data-live-chat]");
  if (chat) {
    follow(chat.getAttribute("data-live-chat"), {
      transcript: function (message) {
        var box = document.getElementById("transcript");
        var open = {};
        box.querySelectorAll("details[open][data-fold]").forEach(function (d) {
          open[d.getAttribute("data-fold")] = true;
        });
        var atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
        box.innerHTML = JSON.parse(message.data).html;
        box.querySelectorAll("details[data-fold]").forEach(function (d) {
          if (open[d.getAttribute("data-fold")]) { d.open = true; }
        });
        if (atEnd) { window.scrollTo(0, document.body.scrollHeight); }
      }
    });
  }
})();
