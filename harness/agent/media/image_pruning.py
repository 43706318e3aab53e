"""Dropping old images before each model call, like old tool results (`pruning`).

An image costs a thousand tokens or more on every call, so only the last few turns keep
theirs; older ones are replaced by a note with the image's path, which the model can still
mention or send back with `send_file`. Like all pruning it only touches the copy sent to the
model: the session keeps the path of every image.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.agent.transcript import turn_boundaries
from harness.llm.types import Message


def image_note(path: str) -> str:
    """The line that stands for a pruned image."""
    return f"[earlier image {path} not shown again to save context]"


def prune_images(messages: Sequence[Message], *, keep_turns: int = 2) -> list[Message]:
    """A copy of `messages` where user messages before the last `keep_turns` turns carry no
    images, each replaced by `image_note(path)` at the end of the text. Unchanged messages are
    the same objects; pruning twice changes nothing more."""
    starts = turn_boundaries(messages)
    protected_from = starts[-keep_turns] if keep_turns and len(starts) >= keep_turns else 0
    if keep_turns == 0:
        protected_from = len(messages)
    out = list(messages)
    for i in range(protected_from):
        message = out[i]
        if message.images:
            notes = "\n".join(image_note(image.path) for image in message.images)
            out[i] = message.model_copy(update={"images": (), "text": f"{message.text}\n{notes}"})
    return out
