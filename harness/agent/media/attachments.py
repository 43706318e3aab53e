"""The files that came with a message, made into something the model can use.

Each attachment is one durable step (`attachment`): downloaded through its channel, checked
and kept in the workspace inbox, never fetched again once kept, retried when the platform
fails for a while. Voice notes and audio are then transcribed, each a durable step too
(`transcribe`). What the model receives is one user message: the person's text, a note per
file (path, type, size, inlined text), photos as images. What cannot be used is said to the
person once, in `Received.notice`. A document's text and a transcript are outside content,
wrapped as untrusted data (`harness.agent.untrusted`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agent import platforms
from harness.agent.media.documents import describe, human_size
from harness.agent.media.inbox import InboxFile, store
from harness.agent.untrusted import new_id, wrap
from harness.errors import StepFailedError
from harness.events import Attachment, MessageReceived
from harness.llm.transcription import OpenAITranscriber, Transcriber
from harness.llm.types import ImageRef, Message
from harness.runtime.steps import Context
from harness.settings import Settings
from harness.workspace_files import read_bytes

IMAGE_KINDS = frozenset({"photo", "sticker"})
AUDIO_KINDS = frozenset({"voice", "audio"})
NO_TRANSCRIPTION = (
    "I can't listen to voice notes yet: set TRANSCRIBE_PROVIDER=openai (with OPENAI_API_KEY, "
    "or OPENAI_BASE_URL for a compatible server) to let me. I kept the recording."
)


@dataclass(frozen=True)
class Received:
    """What a message with attachments became: the user `message` for the model (None when
    there is nothing the model could use) and a `notice` for the person ("" when none)."""

    message: Message | None
    notice: str


def receive(ctx: Context, data: MessageReceived, settings: Settings, workspace: Path) -> Received:
    """Download, keep and describe the message's attachments; see the module docstring.
    Deterministic across replays: every outside effect is a step."""
    files = [
        _download_step(ctx, data, index, attachment, settings, workspace)
        for index, attachment in enumerate(data.attachments)
    ]
    notes: list[str] = []
    problems: list[str] = []
    images: list[ImageRef] = []
    for file in files:
        if file.refused is not None:
            problems.append(f"I couldn't take {_called(file)}: {file.refused}.")
            notes.append(f"[{file.kind} {file.name!r} not received: {file.refused}]")
        elif file.kind in AUDIO_KINDS:
            transcript = _transcript(ctx, file, settings, workspace)
            if transcript is None:
                if NO_TRANSCRIPTION not in problems:
                    problems.append(_no_transcript(settings))
                notes.append(f"[{file.kind} saved at {file.path}; not transcribed]")
            else:
                said = wrap(transcript, f"{file.kind} transcript {file.path}", _wrapper_id(ctx))
                notes.append(f"[{file.kind} saved at {file.path}; transcript:]\n{said}")
        elif file.kind in IMAGE_KINDS and file.mime_type.startswith("image/"):
            shown = settings.media_images
            if shown:
                images.append(ImageRef(path=file.path, media_type=file.mime_type))
            notes.append(
                f"[{file.kind} saved at {file.path} ({file.mime_type}, "
                f"{human_size(file.size)}){'; shown below' if shown else ''}]"
            )
        else:
            inline = settings.media_inline_chars
            notes.append(describe(file, workspace, inline, wrapper_id=lambda: _wrapper_id(ctx)))
    text = "\n\n".join(part for part in (data.message.strip(), *notes) if part)
    usable = bool(data.message.strip()) or any(f.refused is None for f in files)
    only_unheard = all(f.kind in AUDIO_KINDS for f in files) and not data.message.strip()
    if not usable or (only_unheard and not _transcribes(settings)):
        return Received(None, " ".join(problems))
    return Received(Message(role="user", text=text, images=tuple(images)), " ".join(problems))


def steering_message(received: Received) -> Message:
    """A message with files that arrived during a turn, for the model: what could be used,
    and what could not, for the model to tell the person (there is no separate notice)."""
    told = f"[tell the person: {received.notice}]" if received.notice else ""
    if received.message is None:
        return Message.user(told or "[the person sent files that could not be used]")
    if not told:
        return received.message
    return received.message.model_copy(update={"text": f"{received.message.text}\n\n{told}"})


def _wrapper_id(ctx: Context) -> str:
    """A new id to wrap what a file says (outside content), the same on every replay."""
    return str(ctx.step.run("untrusted-id", new_id))


def _called(file: InboxFile) -> str:
    article = "your"
    return f"{article} {file.kind.replace('_', ' ')}" + (f" {file.name}" if file.name else "")


def _transcribes(settings: Settings) -> bool:
    return settings.transcribe_provider == "openai"


def _no_transcript(settings: Settings) -> str:
    if not _transcribes(settings):
        return NO_TRANSCRIPTION
    return "I couldn't transcribe your recording this time; I kept it in case you try again."


def _download_step(
    ctx: Context,
    data: MessageReceived,
    index: int,
    attachment: Attachment,
    settings: Settings,
    workspace: Path,
) -> InboxFile:
    args = (data, ctx.event.id, index, attachment, settings.media_max_bytes, workspace)
    try:
        raw = ctx.step.run("attachment", _download, *args)
    except StepFailedError as exc:
        reason = f"the download kept failing ({exc.error})"
        return InboxFile(kind=attachment.kind, name=attachment.name, refused=reason)
    return InboxFile.model_validate(raw)


def _download(
    data: MessageReceived,
    event_id: str,
    index: int,
    attachment: Attachment,
    max_bytes: int,
    workspace: Path,
) -> dict[str, Any]:
    """One attachment into the inbox. Transient platform failures raise (the step retries);
    anything else is a refusal the person is told about."""
    chat = platforms.installed()
    try:
        if chat is None:
            raise platforms.FileRefused("unsupported")
        download = chat.fetch(data.channel, attachment, max_bytes)
    except platforms.FileRefused as exc:
        refused = _refusal(exc, max_bytes)
        return InboxFile(kind=attachment.kind, name=attachment.name, refused=refused).model_dump()
    kept = store(
        workspace,
        data.session_key,
        event_id,
        index,
        attachment,
        download.content,
        download.content_type,
    )
    return kept.model_dump()


def _refusal(exc: platforms.FileRefused, max_bytes: int) -> str:
    """Why a file was not received, for the person."""
    if exc.kind == "too_large":
        return f"it is larger than the {human_size(max_bytes)} I accept (MEDIA_MAX_BYTES)"
    if exc.kind == "refused":
        return f"the platform would not give it to me ({exc.description})"
    return "this chat channel cannot fetch files"


def _transcript(ctx: Context, file: InboxFile, settings: Settings, workspace: Path) -> str | None:
    """The transcript of a kept recording, or None when transcription is off or failed."""
    if not _transcribes(settings):
        return None
    try:
        text = ctx.step.run("transcribe", _transcribe, file, settings, workspace)
    except StepFailedError:
        return None
    return str(text) if text else None


def _transcribe(file: InboxFile, settings: Settings, workspace: Path) -> str:
    transcriber: Transcriber = OpenAITranscriber(
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
        model=settings.transcribe_model,
        base_url=settings.openai_base_url,
    )
    audio = read_bytes(workspace, file.path)
    return transcriber.transcribe(audio, Path(file.path).name, file.mime_type or "audio/ogg")
