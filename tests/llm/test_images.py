"""Images for the models: loaded from the workspace, shrunk over the limits, never escaping."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from PIL import Image

from harness.llm.anthropic_wire import convert_messages as anthropic_messages
from harness.llm.images import MAX_EDGE, with_image_data
from harness.llm.openai import convert_messages as openai_messages
from harness.llm.types import ImageRef, Message


def _save(path: Path, size: tuple[int, int]) -> None:
    Image.new("RGB", size, (10, 20, 30)).save(path, format="PNG")


def test_large_image_is_resized_under_the_limit(tmp_path: Path) -> None:
    # Given a photo larger than providers accept
    _save(tmp_path / "big.png", (4000, 1000))
    message = Message(
        role="user", text="look", images=(ImageRef(path="big.png", media_type="image/png"),)
    )
    # When its data is loaded for a model call
    (loaded,) = with_image_data([message], tmp_path)
    # Then it is a JPEG no larger than MAX_EDGE on its long side
    (image,) = loaded.images
    assert image.media_type == "image/jpeg"
    with Image.open(io.BytesIO(base64.b64decode(image.data))) as decoded:
        assert max(decoded.size) == MAX_EDGE


def test_image_outside_the_workspace_is_not_loaded(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _save(tmp_path / "secret.png", (10, 10))
    message = Message(role="user", text="x", images=(ImageRef(path="../secret.png"),))

    (loaded,) = with_image_data([message], workspace)

    assert loaded.images == ()


def test_both_providers_put_a_loaded_image_in_the_user_turn() -> None:
    image = ImageRef(path="a.png", media_type="image/png", data="aGVsbG8=")
    message = Message(role="user", text="what is this?", images=(image,))

    (anthropic,) = anthropic_messages([message], "claude")
    (openai,) = openai_messages([], [message])

    assert [b["type"] for b in anthropic["content"]] == ["image", "text"]
    assert openai["content"][1] == {  # type: ignore[index]
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,aGVsbG8="},
    }


def test_session_copy_of_an_image_holds_no_bytes() -> None:
    message = Message(role="user", text="x", images=(ImageRef(path="inbox/c/a.jpg"),))

    assert '"data":""' in message.model_dump_json()
