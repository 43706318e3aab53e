"""The Slack channel against the fake Web API server."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from channels.base import Channel, Publish, Respond
from channels.errors import (
    ChannelNotConfiguredError,
    DestinationError,
    MessageRejected,
    PlatformUnavailable,
    RateLimited,
    WebhookRejected,
)
from channels.slack.api import SlackApi
from channels.slack.channel import SlackChannel
from channels.slack.format import to_chunks
from channels.slack.setup import BOT_EVENTS, BOT_SCOPES
from harness.events import Destination
from tests.channels import payloads
from tests.channels.conftest import PUBLIC_URL, slack_settings
from tests.channels.test_verify import slack_headers
from tests.fakes.slack_api import BOT_USER_ID, FakeSlackApi

THREAD = Destination(
    chat_id="C123ABC456", message_id="1515449522.000016", thread_id="1515449522.000016"
)
DM = Destination(chat_id="D024BE91L", message_id="1355517523.000005")


def long_reply(paragraphs: int = 6) -> str:
    return "\n\n".join(f"Part {n}: " + "lorem ipsum " * 250 for n in range(paragraphs))


def test_slack_channel_implements_the_protocol(slack: SlackChannel) -> None:
    assert isinstance(slack, Channel)
    assert slack.name == "slack"


def test_signed_webhook_is_verified_and_transformed(slack_api: FakeSlackApi) -> None:
    # Given a channel whose clock matches the request's timestamp
    now = int(time.time())
    channel = SlackChannel(slack_settings(slack_api), clock=lambda: now)
    body = json.dumps(payloads.slack_app_mention()).encode()

    # When the request is verified and transformed
    channel.verify(slack_headers(body, timestamp=now), body)
    inbound = channel.transform(json.loads(body), slack_headers(body, timestamp=now))

    # Then it publishes at once; the sender's display name is looked up in the background
    # and is there for the user's next message
    assert isinstance(inbound, Publish)
    assert channel.wait_idle()
    again = channel.transform(json.loads(body), slack_headers(body, timestamp=now))
    assert isinstance(again, Publish)
    assert again.event.data["sender"]["name"] == "Ada"
    with pytest.raises(WebhookRejected):
        channel.verify(slack_headers(body, timestamp=now - 600), body)


def test_transform_makes_no_platform_call_on_the_webhook_path(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    # When a user's first message arrives, its event is published without waiting for
    # users.info (which would have answered "Ada")
    inbound = slack.transform(payloads.slack_dm(), {})
    assert isinstance(inbound, Publish)
    assert inbound.event.data["sender"]["name"] == ""
    # Then the name is fetched in the background
    assert slack.wait_idle()
    assert [c.params.get("user") for c in slack_api.calls_to("users.info")] == ["U0USER"]


def test_url_verification_is_answered(slack: SlackChannel) -> None:
    inbound = slack.transform(payloads.slack_url_verification(), {})

    assert isinstance(inbound, Respond)
    assert inbound.body == {"challenge": payloads.slack_url_verification()["challenge"]}


def test_retried_delivery_gives_the_same_event_id(slack: SlackChannel) -> None:
    payload = payloads.slack_app_mention()

    first = slack.transform(payload, {})
    retry = slack.transform(
        payload, {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
    )

    assert isinstance(first, Publish) and isinstance(retry, Publish)
    assert first.event.id == retry.event.id


def test_display_names_are_cached(slack: SlackChannel, slack_api: FakeSlackApi) -> None:
    slack.transform(payloads.slack_dm(ts="1.000001"), {})
    assert slack.wait_idle()
    slack.transform(payloads.slack_dm(ts="2.000002"), {})
    assert slack.wait_idle()

    assert len(slack_api.calls_to("users.info")) == 1


def test_display_name_cache_expires(slack_api: FakeSlackApi) -> None:
    clock = [0.0]
    api = SlackApi(slack_api.token, slack_api.base_url, user_cache_ttl=60, clock=lambda: clock[0])

    api.display_name("U0USER")
    clock[0] = 61.0
    api.display_name("U0USER")

    assert len(slack_api.calls_to("users.info")) == 2


def test_unknown_user_gets_an_empty_name_instead_of_failing(slack: SlackChannel) -> None:
    payload = payloads.slack_dm()
    payload["event"]["user"] = "U0NOBODY"

    inbound = slack.transform(payload, {})

    assert isinstance(inbound, Publish)
    assert inbound.event.data["sender"] == {"id": "U0NOBODY", "name": "", "username": None}


def test_reply_is_posted_in_the_thread(slack: SlackChannel, slack_api: FakeSlackApi) -> None:
    ids = slack.send_reply("Done: **3** files", THREAD, {}, "run-1")

    [call] = slack_api.calls_to("chat.postMessage")
    assert call.params["channel"] == "C123ABC456"
    assert call.params["thread_ts"] == "1515449522.000016"
    assert call.params["text"] == "Done: *3* files"
    assert call.token == slack_api.token
    assert ids == [slack_api.messages[0]["ts"]]


def test_reply_to_a_top_level_dm_is_posted_in_the_conversation(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    slack.send_reply("Hi", DM, {}, "run-2")

    [call] = slack_api.calls_to("chat.postMessage")
    assert "thread_ts" not in call.params


def test_long_reply_is_posted_in_order_within_the_limit(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    reply = long_reply()

    ids = slack.send_reply(reply, THREAD, {}, "run-3")

    assert [m["text"] for m in slack_api.messages] == to_chunks(reply)
    assert len(ids) == len(to_chunks(reply)) > 1
    assert all(m["thread_ts"] == THREAD.thread_id for m in slack_api.messages)


def test_retry_with_chunks_already_sent_posts_only_the_rest(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    # Given the first attempt fails after chunks 0 and 1, recording what it posted
    reply = long_reply()
    recorded: dict[int, str] = {}

    def record(index: int, ts: str) -> None:
        recorded[index] = ts
        if index == 1:
            slack_api.fail_next(status=500, method="chat.postMessage")

    with pytest.raises(PlatformUnavailable):
        slack.send_reply(reply, THREAD, {}, "run-4", on_chunk_sent=record)

    # When the retry skips them
    retried = slack.send_reply(reply, THREAD, {}, "run-4", skip_chunks=set(recorded))

    # Then every chunk appears exactly once, in order
    assert [m["text"] for m in slack_api.messages] == to_chunks(reply)
    assert len(retried) == len(to_chunks(reply)) - 2


def test_rate_limited_post_is_retried_after_retry_after(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    slack_api.fail_next(status=429, retry_after=0, method="chat.postMessage")

    ids = slack.send_reply("hello", THREAD, {}, "run-5")

    assert len(ids) == 1
    assert len(slack_api.calls_to("chat.postMessage")) == 2


def test_persistent_rate_limit_raises_with_retry_after(slack_api: FakeSlackApi) -> None:
    api = SlackApi(slack_api.token, slack_api.base_url, rate_limit_retries=0)
    slack_api.fail_next(status=429, retry_after=7)

    with pytest.raises(RateLimited) as caught:
        api.post_message("C123ABC456", "hello")

    assert caught.value.retry_after == 7


@pytest.mark.parametrize(
    ("error", "exception"),
    [("channel_not_found", DestinationError), ("msg_too_long", MessageRejected)],
)
def test_slack_errors_map_to_our_exceptions(
    slack_api: FakeSlackApi, error: str, exception: type[Exception]
) -> None:
    api = SlackApi(slack_api.token, slack_api.base_url)
    slack_api.fail_next(status=200, error=error)

    with pytest.raises(exception, match=error):
        api.post_message("C123ABC456", "hello")


def test_acknowledge_and_complete_swap_the_reactions(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    slack.acknowledge(THREAD, {})
    assert slack_api.reactions == {("C123ABC456", THREAD.message_id, "eyes")}

    slack.acknowledge(THREAD, {})  # already_reacted is fine
    slack.complete(THREAD, {})

    assert slack_api.reactions == {("C123ABC456", THREAD.message_id, "white_check_mark")}


def test_acknowledge_and_complete_never_raise(slack: SlackChannel, slack_api: FakeSlackApi) -> None:
    slack_api.fail_next(count=3, status=500)

    slack.acknowledge(THREAD, {})
    slack.complete(THREAD, {})

    assert slack_api.reactions == set()


def test_setup_reports_the_token_and_the_manifest(slack: SlackChannel) -> None:
    report = slack.setup()

    assert f"bot user {BOT_USER_ID}" in report
    manifest = yaml.safe_load(report[report.index("\n\n") :])
    events = manifest["settings"]["event_subscriptions"]
    assert events["request_url"] == f"{PUBLIC_URL}/webhooks/slack"
    assert events["bot_events"] == BOT_EVENTS
    assert manifest["oauth_config"]["scopes"]["bot"] == BOT_SCOPES


def test_missing_token_means_not_configured(slack_api: FakeSlackApi) -> None:
    with pytest.raises(ChannelNotConfiguredError):
        SlackChannel(slack_settings(slack_api, slack_bot_token=None))


def test_base_url_must_end_in_api(slack_api: FakeSlackApi) -> None:
    settings = slack_settings(slack_api, slack_api_base_url=slack_api.base_url.rstrip("/"))

    assert settings.slack_api_base_url == slack_api.base_url
    with pytest.raises(ValueError, match="/api/"):
        slack_settings(slack_api, slack_api_base_url="http://127.0.0.1:1/")
