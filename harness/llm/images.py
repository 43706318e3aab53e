"""Images for the models: read from the workspace, shrunk to what providers accept, base64.

Both providers refuse or downscale big images: Anthropic recommends at most 1568 px on the
long edge and refuses more than 5 MB; OpenAI tiles anything larger than 2048 px. Shrinking
here keeps requests small and predictable. Pillow is the one image library we use.
"""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Sequence
from pathlib import Path

from harness.llm.types import ImageRef, Message
from harness.workspace_files import read_bytes

log = logging.getLogger(__name__)
MAX_EDGE = 1568
MAX_BYTES = 3_750_000  # base64 grows it by 4/3: stays under Anthropic's 5 MB


def encode_image(workspace: Path, path: str, media_type: str) -> tuple[str, str] | None:
    """The image at `path` (relative to `workspace`) as (media type, base64), resized to
    `MAX_EDGE` and re-encoded as JPEG when it is larger than the limits; None when the file is
    missing, a link (never followed: `harness.workspace_files`) or not an image. Never raises
    for a bad file."""
    # Imported here: Pillow holds ~2 MB in every worker and web process; only an image needs it.
    from PIL import Image, UnidentifiedImageError

    try:
        raw = read_bytes(workspace, path)
        with Image.open(io.BytesIO(raw)) as image:
            if max(image.size) <= MAX_EDGE and len(raw) <= MAX_BYTES:
                return media_type, base64.b64encode(raw).decode()
            image.thumbnail((MAX_EDGE, MAX_EDGE))
            out = io.BytesIO()
            image.convert("RGB").save(out, format="JPEG", quality=85)
            return "image/jpeg", base64.b64encode(out.getvalue()).decode()
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        log.warning("image %s not sent to the model: %s", path, exc)
        return None


def with_image_data(messages: Sequence[Message], workspace: Path) -> list[Message]:
    """`messages` with every image's `data` filled from the workspace (images that cannot be
    read are dropped; their path is still in the text). Messages without images are the same
    objects."""
    out: list[Message] = []
    for message in messages:
        if not message.images:
            out.append(message)
            continue
        images: list[ImageRef] = []
        for image in message.images:
            encoded = image if image.data else _load(image, workspace)
            if encoded is not None:
                images.append(encoded)
        out.append(message.model_copy(update={"images": tuple(images)}))
    return out


def _load(image: ImageRef, workspace: Path) -> ImageRef | None:
    encoded = encode_image(workspace, image.path, image.media_type)
    if encoded is None:
        return None
    media_type, data = encoded
    return image.model_copy(update={"media_type": media_type, "data": data})
