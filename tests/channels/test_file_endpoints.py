"""The file endpoints as the platforms document them (checked against the Telegram Bot API
reference and the official slack_sdk; see docs/architecture.md): the channels' downloads and
uploads against the fakes, which enforce the documented fields and limits."""

from __future__ import annotations

import json

from channels.slack.channel import SlackChannel
from channels.telegram.channel import MAX_PHOTO_BYTES, TelegramChannel
from harness.events import Attachment, Destination
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi


def test_telegram_getfile_answers_a_documented_file_and_the_file_url_serves_it(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a file Telegram holds
    telegram_api.add_file("BQAD-doc", b"hello", "documents/file_7.txt")

    # When the channel downloads it
    got = telegram.download(Attachment(kind="document", ref="BQAD-doc", size=5), 1024)

    # Then getFile was asked, then the file URL gave the bytes
    (call,) = telegram_api.calls_to("getFile")
    assert call.params["file_id"] == "BQAD-doc"
    assert got.content == b"hello"
    (download,) = telegram_api.calls_to("download")
    assert download.params["path"] == f"/file/bot{telegram_api.token}/documents/file_7.txt"
    # and the File it answers has the fields the Bot API marks required, and the path
    file = telegram.api.call("getFile", {"file_id": "BQAD-doc"})
    assert {"file_id", "file_unique_id", "file_path"} <= set(file), file


def test_telegram_sends_a_large_image_as_a_document_and_cuts_a_long_caption(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given an image over sendPhoto's 10 MB and a caption over 1024 characters (emoji count 2)
    big = b"\x89PNG" + b"0" * MAX_PHOTO_BYTES
    caption = "📈" * 600

    # When both are sent
    small_id = telegram.send_file(
        b"\x89PNG", "a.png", "image/png", "", Destination(chat_id="5"), {}
    )
    big_id = telegram.send_file(big, "b.png", "image/png", caption, Destination(chat_id="5"), {})

    # Then the small one is a photo, the big one a document, the caption within the limit
    small, large = telegram_api.sent_files
    assert (small["method"], large["method"]) == ("sendPhoto", "sendDocument")
    assert len(large["caption"].encode("utf-16-le")) // 2 == 1024
    assert small_id != big_id and small_id.isdigit()


def test_slack_upload_goes_through_the_sdk_with_the_documented_arguments(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    # When the channel uploads a file into a thread (slack_sdk's files_upload_v2)
    file_id = slack.send_file(
        b"a,b\n", "r.csv", "text/csv", "Your report", Destination(chat_id="C1", thread_id="1.2"), {}
    )

    # Then getUploadURLExternal got filename and length, the bytes went to the upload URL,
    # and completeUploadExternal got the files JSON, channel_id, thread_ts and the comment
    (ask,) = slack_api.calls_to("files.getUploadURLExternal")
    assert (ask.params["filename"], str(ask.params["length"])) == ("r.csv", "4")
    (upload,) = slack_api.calls_to("upload")
    (done,) = slack_api.calls_to("files.completeUploadExternal")
    files = json.loads(done.params["files"])
    assert files == [{"id": file_id, "title": "r.csv"}], files
    assert (done.params["channel_id"], done.params["thread_ts"]) == ("C1", "1.2")
    assert done.params["initial_comment"] == "Your report"
    assert slack_api.uploads[0]["content"] == b"a,b\n"
    assert upload.params["name"] == file_id


def test_slack_download_sends_the_bot_token_to_url_private(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    url = slack_api.add_file("notes.txt", b"milk")

    got = slack.download(Attachment(kind="document", ref=url, size=4), 1024)

    assert got.content == b"milk"
    (download,) = slack_api.calls_to("download")
    assert download.token == f"Bearer {slack_api.token}"
