"""The answer as it streams, as a hook: each model call's text goes to the turn's `LiveText`.

A watch point (`harness.agent.hooks`): the model call's step starts the text of think step
`think`, attempt `attempt` (`LiveText.begin`, so a retried step starts a fresh text), gives
the provider its sink, and publishes what is left when the call ends. A replayed step streams
nothing.
"""

from __future__ import annotations

from harness.agent.hooks import Hooks
from harness.agent.live_text import LiveText
from harness.llm.provider import TextSink


class StreamedText(Hooks):
    """Passes each model call's streamed text on to `live` (not durable)."""

    def __init__(self, live: LiveText) -> None:
        self.live = live

    def model_started(self, think: int, attempt: int) -> TextSink | None:
        """Start the call's text; its pieces go to `live`."""
        return self.live.begin(think, attempt)

    def model_ended(self) -> None:
        """Publish the text not yet published."""
        self.live.end()
