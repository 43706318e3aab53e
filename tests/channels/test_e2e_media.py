"""Files through the real webhooks: a person sends a photo, a document or a voice note to the
fake Telegram, the fleet downloads it from the fake's file URL, the scripted model sees it, and
files the agent sends come back through sendPhoto / sendDocument."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from harness.agent.deps import build_deps, set_agent_deps
from harness.records.pairing import RedisAccessStore
from harness.runtime import Runtime
from harness.runtime.testing import drain
from tests.agent.conftest import make_settings
from tests.channels import payloads
from tests.channels.approval_presses import TELEGRAM_HEADERS, slack_signed
from tests.channels.test_e2e_turn import fleet  # noqa: F401  (the fixture)
from tests.fakes.model_server import ModelServer, Reply, anthropic_tool_results
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

ALICE = f"telegram:user:{payloads.ALICE['id']}"


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def _send(client: TestClient, runtime: Runtime, update: dict[str, Any]) -> None:
    RedisAccessStore(runtime).grant(ALICE, "Alice", "test")
    response = client.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
    assert response.status_code == 200, response.text
    drain(runtime)


def _kinds(content: list[dict[str, Any]]) -> list[str]:
    """The block types of a user message, leaving out the volatile system reminder that the
    provider appends to the last user turn."""
    return [block["type"] for block in content if "<system-reminder>" not in str(block)]


def _reconfigure(tmp_path: Path, model_server: ModelServer, **overrides: Any) -> None:
    overrides.setdefault("stream_replies", False)  # as in the shared fleet fixture
    set_agent_deps(build_deps(make_settings(tmp_path / "workspace", model_server, **overrides)))


def test_captionless_photo_reaches_the_model_as_an_image(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a photo without a caption whose largest size the platform serves
    telegram_api.add_file("AgAD-large", _png(), "photos/file_1.png")
    model_server.script(Reply.answer("A red rectangle."))
    # When it arrives through the webhook
    _send(fleet, runtime, payloads.tg_photo(caption=None))
    # Then the model got an image block and the path, the file is in the inbox, and it answered
    (request,) = model_server.requests
    (user,) = [m for m in request.body["messages"] if m["role"] == "user"]
    assert _kinds(user["content"]) == ["image", "text"], user["content"]
    assert "inbox/telegram-1111111/" in user["content"][1]["text"]
    assert list((tmp_path / "workspace" / "inbox" / "telegram-1111111").iterdir())
    assert telegram_api.messages[-1]["text"] == "A red rectangle."


def test_document_path_is_given_and_its_text_inlined(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    telegram_api.add_file("BQAD-notes.txt", b"milk, eggs, tea")
    model_server.script(Reply.answer("Your list has three things."))

    _send(fleet, runtime, payloads.tg_document())

    body = json.dumps(model_server.requests[0].body)
    assert "inbox/telegram-1111111/" in body and "notes.txt" in body, body
    assert "milk, eggs, tea" in body
    assert telegram_api.messages[-1]["text"] == "Your list has three things."


@pytest.mark.parametrize(
    ("message", "file_id", "content", "file_path", "kept_as"),
    [
        (payloads.tg_voice, "AwAD-voice", b"OggS fake opus", "voice/file_2.oga", None),
        (payloads.tg_audio, "CQAD-audio", b"ID3 fake mp3 frames", "music/file_3.mp3", "list.mp3"),
    ],
    ids=["voice note", "audio file"],
)
def test_voice_notes_and_audio_files_are_transcribed_by_the_scripted_server(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
    message: Any,
    file_id: str,
    content: bytes,
    file_path: str,
    kept_as: str | None,
) -> None:
    # Given transcription through the OpenAI endpoint of the scripted server
    _reconfigure(
        tmp_path,
        model_server,
        transcribe_provider="openai",
        openai_api_key=model_server.api_key,
        openai_base_url=model_server.openai_url,
    )
    telegram_api.add_file(file_id, content, file_path)
    model_server.script(Reply.answer("Milk it is."))
    # When a voice note, or an audio file, arrives
    _send(fleet, runtime, message())
    # Then its bytes were sent for transcription, and the transcript is what the model reads
    apis = [r.api for r in model_server.requests]
    assert apis == ["transcription", "anthropic"], apis
    assert content in model_server.requests[0].raw
    body = json.dumps(model_server.requests[1].body)
    assert model_server.transcript in body, body
    # And an audio file is kept in the inbox, with its path given to the model
    (kept,) = (tmp_path / "workspace" / "inbox" / "telegram-1111111").iterdir()
    assert kept.read_bytes() == content
    if kept_as is not None:
        assert "[audio saved at inbox/telegram-1111111/" in body and kept_as in body, body
    assert telegram_api.messages[-1]["text"] == "Milk it is."


@pytest.mark.parametrize(
    ("update", "file_id", "kind", "size"),
    [
        (payloads.tg_video_note(), "DQAD-note", "video_note", 4096),
        (payloads.tg_video(), "BAAD-video", "video", 8192),
    ],
    ids=["video_note", "video"],
)
def test_video_is_kept_and_described_to_the_model_by_path_type_and_size(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
    update: dict[str, Any],
    file_id: str,
    kind: str,
    size: int,
) -> None:
    # Given a video the platform serves (Telegram names neither a video note nor this video)
    content = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * (size - 12)
    telegram_api.add_file(file_id, content, f"videos/{file_id}.mp4")
    model_server.script(Reply.answer("Nice video."))
    # When it arrives through the webhook
    _send(fleet, runtime, update)
    # Then it is in the inbox as an .mp4, the model was told its path, type and size, and
    # nothing was sent for transcription
    (kept,) = (tmp_path / "workspace" / "inbox" / "telegram-1111111").iterdir()
    assert kept.read_bytes() == content and kept.name.endswith(f"{kind}.mp4"), kept.name
    (request,) = model_server.requests
    note = f"[{kind} saved at inbox/telegram-1111111/{kept.name} (video/mp4, {size // 1024} KB)]"
    assert note in json.dumps(request.body), (note, request.body)
    assert telegram_api.messages[-1]["text"] == "Nice video."


def test_voice_note_without_transcription_is_answered_with_how_to_enable_it(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    telegram_api.add_file("AwAD-voice", b"OggS fake opus")

    _send(fleet, runtime, payloads.tg_voice())

    (sent,) = telegram_api.messages
    assert "TRANSCRIBE_PROVIDER" in sent["text"], sent["text"]
    assert model_server.requests == []


def test_oversized_file_is_refused_with_a_message_to_the_person(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    _reconfigure(tmp_path, model_server, media_max_bytes=2048)
    telegram_api.add_file("BQAD-big.txt", b"x" * 4096)

    _send(fleet, runtime, payloads.tg_document(name="big.txt", size=4096))

    (sent,) = telegram_api.messages
    assert "larger than" in sent["text"] and "MEDIA_MAX_BYTES" in sent["text"], sent["text"]
    assert telegram_api.calls_to("download") == [], "a file known to be too big is not fetched"
    assert model_server.requests == []


def test_failing_download_is_retried(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    clock: ManualClock,
) -> None:
    # Given a file URL that fails once with a server error
    telegram_api.add_file("BQAD-notes.txt", b"milk, eggs, tea")
    telegram_api.fail_next(1, status=502, method="download")
    model_server.script(Reply.answer("Got it."))
    # When the document arrives
    _send(fleet, runtime, payloads.tg_document())
    clock.advance(60)  # past the retry backoff
    drain(runtime)
    # Then the download was tried again, and the model read the file
    assert len(telegram_api.calls_to("download")) == 2
    assert "milk, eggs, tea" in json.dumps(model_server.requests[0].body)


def test_send_file_posts_once(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a file in the workspace and a model that sends it, then answers
    (tmp_path / "workspace" / "report.csv").write_text("a,b\n1,2\n")
    model_server.script(
        Reply.tool("send_file", {"path": "report.csv", "caption": "Your report"}),
        Reply.answer("Sent."),
    )
    # When the person asks through the webhook
    _send(fleet, runtime, payloads.tg_private_text(text="send me the report"))
    # Then the file went out once, as a document, with its caption
    (sent,) = telegram_api.sent_files
    assert (sent["method"], sent["name"], sent["caption"]) == (
        "sendDocument",
        "report.csv",
        "Your report",
    )
    assert sent["content"] == b"a,b\n1,2\n"


@pytest.mark.parametrize("way", ["dotdot", "absolute", "symlink"])
def test_send_file_refuses_a_path_outside_the_workspace_with_an_error_the_model_reads(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
    way: str,
) -> None:
    # Given a file next to the workspace, reachable by `..`, by its absolute path, or through
    # a link inside the workspace, and a model that tries to send it
    secret = tmp_path / "secret.txt"
    secret.write_text("the door code is 4711")
    (tmp_path / "workspace" / "link.txt").symlink_to(secret)
    path = {"dotdot": "../secret.txt", "absolute": str(secret), "symlink": "link.txt"}[way]
    model_server.script(Reply.tool("send_file", {"path": path}), Reply.answer("I can't."))
    # When the person asks through the webhook
    _send(fleet, runtime, payloads.tg_private_text(text="send me the secret"))
    # Then nothing was sent, the model read why, and the chat got its answer
    assert telegram_api.sent_files == []
    (result,) = anthropic_tool_results(model_server.requests[1].body)
    assert result.get("is_error") is True, result
    assert "outside the workspace" in str(result["content"]), result
    assert telegram_api.messages[-1]["text"] == "I can't."


def test_send_file_refuses_a_file_over_the_media_limit_with_an_error_the_model_reads(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a 2 KB limit, a 4 KB file in the workspace and a model that sends it
    _reconfigure(tmp_path, model_server, media_max_bytes=2048)
    (tmp_path / "workspace" / "big.csv").write_text("x" * 4096)
    model_server.script(Reply.tool("send_file", {"path": "big.csv"}), Reply.answer("Too big."))
    # When the person asks through the webhook
    _send(fleet, runtime, payloads.tg_private_text(text="send me the big file"))
    # Then nothing was sent, and the model read the file, the limit and the setting
    assert telegram_api.sent_files == []
    (result,) = anthropic_tool_results(model_server.requests[1].body)
    assert result.get("is_error") is True, result
    content = str(result["content"])
    assert "big.csv" in content and "MEDIA_MAX_BYTES (2048 bytes)" in content, content
    assert telegram_api.messages[-1]["text"] == "Too big."


@pytest.mark.parametrize(
    "update",
    [payloads.tg_sticker(), payloads.tg_location()],
    ids=["sticker", "location"],
)
def test_other_content_gets_an_answer(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    update: dict[str, Any],
) -> None:
    telegram_api.add_file("CAAC-sticker", b"RIFF\x00\x00\x00\x00WEBPVP8 ")
    model_server.script(Reply.answer("Noted."))

    _send(fleet, runtime, update)

    assert telegram_api.messages[-1]["text"] == "Noted."


def _send_slack(client: TestClient, runtime: Runtime, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    headers = {**slack_signed(body), "Content-Type": "application/json"}
    response = client.post("/webhooks/slack", content=body, headers=headers)
    assert response.status_code == 200, response.text
    drain(runtime)


def test_slack_file_share_reaches_the_model_as_an_image(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
) -> None:
    # Given a DM carrying only an image, served from url_private with the bot token
    url = slack_api.add_file("receipt.png", _png())
    model_server.script(Reply.answer("A receipt."))
    # When Slack delivers the file_share event
    _send_slack(fleet, runtime, payloads.slack_file_share(url=url))
    # Then the download carried the bot token and the model saw the image
    (download,) = slack_api.calls_to("download")
    assert download.token == f"Bearer {slack_api.token}"
    (user,) = [m for m in model_server.requests[0].body["messages"] if m["role"] == "user"]
    assert _kinds(user["content"]) == ["image", "text"]
    assert slack_api.messages[-1]["text"] == "A receipt."


def test_slack_send_file_uses_the_external_upload_flow_once(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    tmp_path: Path,
) -> None:
    # Given a file in the workspace and a model that sends it
    (tmp_path / "workspace" / "chart.png").write_bytes(_png())
    model_server.script(Reply.tool("send_file", {"path": "chart.png"}), Reply.answer("Done."))
    # When a person mentions the bot in a channel
    _send_slack(fleet, runtime, payloads.slack_app_mention())
    # Then the file was uploaded once and shared in the mention's thread
    (upload,) = slack_api.uploads
    assert (upload["name"], upload["channel_id"]) == ("chart.png", "C123ABC456")
    assert upload["thread_ts"] == payloads.slack_app_mention()["event"]["ts"]
    assert upload["content"] == _png()


def test_telegram_album_arrives_as_one_message(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    clock: ManualClock,
) -> None:
    # Given two photos of one album, the caption on the first
    telegram_api.add_file("AgAD-one", _png())
    telegram_api.add_file("AgAD-two", _png())
    model_server.script(Reply.answer("Two red rectangles."))
    RedisAccessStore(runtime).grant(ALICE, "Alice", "test")
    # When Telegram delivers them as two updates and the fleet runs past the album wait
    for update in (
        payloads.tg_album_part(10030, "AgAD-one", caption="Which is redder?"),
        payloads.tg_album_part(10031, "AgAD-two"),
    ):
        response = fleet.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
        assert response.status_code == 200, response.text
    drain(runtime)
    clock.advance(5)
    drain(runtime)
    # Then the model was asked once, with both photos and the caption, and answered once
    (request,) = model_server.requests
    (user,) = [m for m in request.body["messages"] if m["role"] == "user"]
    assert _kinds(user["content"]) == ["image", "image", "text"]
    assert "Which is redder?" in user["content"][2]["text"]
    assert [m["text"] for m in telegram_api.messages] == ["Two red rectangles."]


def test_photo_reaches_an_openai_model_as_an_image_url(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given the OpenAI wire format
    _reconfigure(
        tmp_path,
        model_server,
        llm_provider="openai",
        openai_api_key=model_server.api_key,
        openai_base_url=model_server.openai_url,
    )
    telegram_api.add_file("AgAD-large", _png())
    model_server.script(Reply.answer("A red rectangle."))
    # When a captionless photo arrives
    _send(fleet, runtime, payloads.tg_photo(caption=None))
    # Then the user turn carries the text and a data URL
    (request,) = model_server.requests
    assert request.api == "openai"
    # The first user message is the person's; the volatile system reminder may follow it.
    user = next(m for m in request.body["messages"] if m["role"] == "user")
    assert _kinds(user["content"]) == ["text", "image_url"]
    assert user["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_photo_is_described_by_path_when_images_are_off(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    _reconfigure(tmp_path, model_server, media_images=False)
    telegram_api.add_file("AgAD-large", _png())
    model_server.script(Reply.answer("I see a file."))

    _send(fleet, runtime, payloads.tg_photo(caption=None))

    body = json.dumps(model_server.requests[0].body)
    assert '"image"' not in body and "inbox/telegram-1111111/" in body, body


def test_a_strangers_file_is_never_fetched(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a person nobody approved (DM_POLICY=pairing)
    telegram_api.add_file("BQAD-notes.txt", b"milk, eggs, tea")
    # When they send a document
    fleet.post("/webhooks/telegram", json=payloads.tg_document(), headers=TELEGRAM_HEADERS)
    drain(runtime)
    # Then they get a pairing code, and the file was not asked for
    (sent,) = telegram_api.messages
    assert "harness pair approve" in sent["text"]
    assert telegram_api.calls_to("getFile") == [] and telegram_api.calls_to("download") == []
    assert model_server.requests == []


def _order(calls: list[Any], file_method: str, text_method: str) -> list[str]:
    """The file and text posts among `calls`, in the order the platform received them."""
    return [c.method for c in calls if c.method in (file_method, text_method)]


def test_a_file_and_the_reply_after_it_arrive_in_order_across_a_retry(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
    clock: ManualClock,
) -> None:
    # Given a model that sends a file, then answers, and a platform that fails the file once
    (tmp_path / "workspace" / "report.csv").write_text("a,b\n1,2\n")
    model_server.script(
        Reply.tool("send_file", {"path": "report.csv"}), Reply.answer("That is the report.")
    )
    telegram_api.fail_next(1, status=502, method="sendDocument")
    # When the person asks, and the fleet runs past the retry's backoff
    _send(fleet, runtime, payloads.tg_private_text(text="send me the report"))
    clock.advance(60)
    drain(runtime)
    # Then the answer waited for the file: the person sees the file, then the text
    order = _order(telegram_api.calls, "sendDocument", "sendMessage")
    assert order == ["sendDocument", "sendDocument", "sendMessage"], order
    assert len(telegram_api.sent_files) == 1
    assert telegram_api.messages[-1]["text"] == "That is the report."


def test_slack_a_file_and_the_reply_after_it_arrive_in_order_across_a_retry(
    fleet: TestClient,  # noqa: F811
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    tmp_path: Path,
    clock: ManualClock,
) -> None:
    # Given a model that sends a file, then answers, and an upload that fails once
    (tmp_path / "workspace" / "chart.png").write_bytes(_png())
    model_server.script(
        Reply.tool("send_file", {"path": "chart.png"}), Reply.answer("That is the chart.")
    )
    slack_api.fail_next(1, status=500, method="files.getUploadURLExternal")
    # When a person mentions the bot, and the fleet runs past the retry's backoff
    _send_slack(fleet, runtime, payloads.slack_app_mention())
    clock.advance(60)
    drain(runtime)
    # Then the file was shared once, before the answer was posted
    order = _order(slack_api.calls, "files.completeUploadExternal", "chat.postMessage")
    assert order == ["files.completeUploadExternal", "chat.postMessage"], order
    assert len(slack_api.uploads) == 1
    assert slack_api.messages[-1]["text"] == "That is the chart."
