"""Speech to text: voice notes and audio through OpenAI's transcription endpoint (or any
compatible server at `OPENAI_BASE_URL`), with the official SDK. Errors become ours here, the
same way as for chat (`harness.llm.openai.classify_error`). The SDK is imported when a
transcriber is built, so that loading the agent's attachments (every worker, `harness
functions`) does not load it."""

from __future__ import annotations

from typing import Protocol

from harness.llm.guard import check_base_url


class Transcriber(Protocol):
    """Turns audio into text."""

    def transcribe(self, audio: bytes, name: str, mime_type: str) -> str:
        """The words spoken in `audio` (a whole file; `name` carries the format's extension).
        Raises `TransientModelError` when worth retrying, `PermanentModelError` otherwise."""
        ...


class OpenAITranscriber:
    """`POST /audio/transcriptions` with `model` (whisper-1, gpt-4o-mini-transcribe, ...).
    Thread-safe. Raises `PermanentModelError` at construction when real model calls are
    forbidden and `base_url` is not on loopback."""

    def __init__(self, *, api_key: str | None, model: str, base_url: str | None = None) -> None:
        import openai

        from harness.llm.openai import DEFAULT_BASE_URL

        url = base_url or DEFAULT_BASE_URL
        check_base_url(url)
        self._secret = api_key
        self._model = model
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=url, max_retries=0, timeout=300.0
        )

    def transcribe(self, audio: bytes, name: str, mime_type: str) -> str:
        """See `Transcriber.transcribe`."""
        from harness.llm.openai import classify_error

        try:
            result = self._client.audio.transcriptions.create(
                model=self._model, file=(name, audio, mime_type)
            )
        except Exception as exc:
            raise classify_error(exc, self._secret) from exc
        return str(getattr(result, "text", "") or "").strip()
