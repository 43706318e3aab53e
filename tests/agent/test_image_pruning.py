"""Old images leave the model's view; their paths stay."""

from __future__ import annotations

from harness.agent.media.image_pruning import image_note, prune_images
from harness.llm.types import ImageRef, Message


def _turn(text: str, *paths: str) -> list[Message]:
    images = tuple(ImageRef(path=p) for p in paths)
    return [Message(role="user", text=text, images=images), Message.assistant("ok")]


def test_images_before_the_last_turns_become_notes() -> None:
    # Given three turns, the first two with a photo each
    messages = [*_turn("one", "inbox/c/a.jpg"), *_turn("two", "inbox/c/b.jpg"), *_turn("three")]
    # When pruned keeping the last two turns
    pruned = prune_images(messages, keep_turns=2)
    # Then the first photo is a note with its path, the second is still an image
    assert pruned[0].images == ()
    assert pruned[0].text == "one\n" + image_note("inbox/c/a.jpg")
    assert [i.path for i in pruned[2].images] == ["inbox/c/b.jpg"]
    assert pruned[4] is messages[4]


def test_pruning_twice_changes_nothing_more() -> None:
    messages = [*_turn("one", "inbox/c/a.jpg"), *_turn("two"), *_turn("three")]

    once = prune_images(messages, keep_turns=2)

    assert prune_images(once, keep_turns=2) == once
