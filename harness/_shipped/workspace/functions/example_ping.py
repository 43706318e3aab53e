"""An example function, safe to leave on: it answers `example/ping` events and does nothing
else. Try it with `harness publish example/ping --data '{"text": "hi"}'` and `harness runs`.
Delete this file, or make its first line `# disabled`, when you no longer want it."""

from harness.runtime import Context, event, function


@function(id="example-ping", trigger=event("example/ping"), retries=0, timeout=10)
def example_ping(ctx: Context) -> dict[str, str]:
    text = str(ctx.event.data.get("text", ""))[:200]
    return {"pong": text, "at": ctx.now().isoformat()}
