"""`POST /webhooks/{channel}`: a chat platform's webhook in, an event on the bus out.

The route knows no platform: it finds the channel in `channels.registry`, then verifies the
raw body, parses it, transforms it and publishes. It never calls a platform or a model itself,
so it answers within Slack's three seconds. Outcomes:

    404  no channel by that name, or it is not configured
    413  body over 1 MiB                        400  malformed JSON, or not a JSON object
    401  verification failed (nothing parsed, nothing published)
    200  the channel's `Respond` body (Slack's challenge), or `{"ok": true, "ignored": reason}`,
         or `{"ok": true, "event_id": ..., "duplicate": ...}` once published
    503  the bus (Redis) is unavailable: the platform retries, and event ids dedupe the retry

`POST /webhooks/{channel}/interactions` (button presses) and `/commands` (Slack's slash
commands, answered with an empty 200) are verified the same way.

A payload the channel cannot handle is answered 200 and logged: a 5xx would only make the
platform redeliver it (Telegram holds back every later update until then).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from channels.approvals import InteractiveChannel
from channels.base import Channel, CommandChannel, Ignored, Inbound, Publish, Respond
from channels.errors import UnknownChannelError, WebhookRejected
from channels.registry import get_channel
from harness.errors import ConfigurationError, InvalidEventError
from harness.runtime import PublishResult
from harness.runtime.bus import publish_async
from harness.web.body import read_body
from harness.web.deps import WebContext, context_of
from harness.web.json_body import parse_json
from harness.web.unavailable import BUS_ERRORS, bus_unavailable

log = logging.getLogger(__name__)

router = APIRouter()
"""The two routes are plain Starlette routes, not FastAPI's: a webhook is the hottest path,
and FastAPI's dependency solving and response serialization took a fifth of its time. An
`HTTPException` raised here is still answered by FastAPI's handler (`{"detail": ...}`)."""


async def receive_webhook(request: Request) -> JSONResponse:
    """Verify, transform and publish one webhook delivery (see the module docstring). All of
    it runs on the event loop: the channel's work is CPU only and the publish is async."""
    return JSONResponse(await _webhook(request.path_params["channel_name"], request))


async def _webhook(channel_name: str, request: Request) -> dict[str, Any]:
    context = context_of(request)
    channel = _channel(channel_name)
    body = await read_body(request)
    try:
        channel.verify(request.headers, body)
    except WebhookRejected as exc:
        log.warning("webhook %s rejected: %s", channel_name, exc.reason)
        raise HTTPException(exc.status, exc.reason) from None
    payload = _parse(body)
    inbound = _transform(channel, payload, request.headers)
    if isinstance(inbound, Respond):
        return inbound.body
    if isinstance(inbound, Ignored):
        if inbound is _UNPROCESSABLE:  # `_transform` logged why, in one line
            return {"ok": True, "ignored": inbound.reason}
        log.info("webhook %s ignored: %s", channel_name, inbound.reason)
        return {"ok": True, "ignored": inbound.reason}
    result = await _publish(context, channel_name, inbound)
    if result is None:
        return {"ok": True, "ignored": "the message could not be turned into a valid event"}
    return {"ok": True, "event_id": result.event_id, "duplicate": result.duplicate}


async def receive_interaction(request: Request) -> JSONResponse:
    """A platform's interactivity request (Slack's button presses): verified like the
    channel's webhook, then handed to its `transform_interaction` (the body is platform
    encoded, e.g. a form) and published. 404 for a channel without interactions."""
    return JSONResponse(await _interaction(request.path_params["channel_name"], request))


async def _interaction(channel_name: str, request: Request) -> dict[str, Any]:
    channel = _channel(channel_name)
    if not isinstance(channel, InteractiveChannel):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{channel_name!r} has no interactions")
    inbound = await _verified(channel, "interaction", request, channel.transform_interaction)
    if not isinstance(inbound, Publish):
        return {"ok": True, "ignored": _ignored("interaction", channel_name, inbound)}
    result = await _publish(context_of(request), channel_name, inbound)
    if result is None:
        return {"ok": True, "ignored": "the interaction could not be turned into a valid event"}
    return {"ok": True, "event_id": result.event_id, "duplicate": result.duplicate}


async def receive_command(request: Request) -> Response:
    """A platform's chat command (Slack's slash commands): verified like the channel's
    webhook, handed to its `transform_command` and published; answered with an empty 200 at
    once (Slack wants it within 3 seconds; the agent's answer is posted as a reply), or with
    the channel's `Respond` body when it answers itself. 404 for a channel without
    commands."""
    channel_name = request.path_params["channel_name"]
    channel = _channel(channel_name)
    if not isinstance(channel, CommandChannel):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{channel_name!r} has no commands")
    inbound = await _verified(channel, "command", request, channel.transform_command)
    if isinstance(inbound, Respond):  # an answer only the person sees (Slack: ephemeral)
        return JSONResponse(inbound.body)
    if isinstance(inbound, Publish):
        await _publish(context_of(request), channel_name, inbound)
    else:
        _ignored("command", channel_name, inbound)
    return Response(status_code=status.HTTP_200_OK)


async def _verified(
    channel: Channel,
    kind: str,
    request: Request,
    transform: Callable[[bytes, Mapping[str, str]], Inbound],
) -> Inbound:
    """The request's body verified with the channel's `verify` (401 or its status when it
    fails), then handed to `transform` off the event loop."""
    body = await read_body(request)
    try:
        channel.verify(request.headers, body)
    except WebhookRejected as exc:
        log.warning("%s %s rejected: %s", kind, channel.name, exc.reason)
        raise HTTPException(exc.status, exc.reason) from None
    return await run_in_threadpool(transform, body, request.headers)


def _ignored(kind: str, channel_name: str, inbound: Inbound) -> str:
    reason = inbound.reason if isinstance(inbound, Ignored) else "nothing to publish"
    log.info("%s %s ignored: %s", kind, channel_name, reason)
    return reason


_UNPROCESSABLE = Ignored("the payload could not be processed")


def _channel(name: str) -> Channel:
    try:
        return get_channel(name)
    except UnknownChannelError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no channel {name!r}") from None
    except ConfigurationError as exc:
        log.warning("webhook for channel %s, which is not configured: %s", name, exc)
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"channel {name!r} is not configured"
        ) from None


def _parse(body: bytes) -> Mapping[str, Any]:
    payload = parse_json(body)
    if not isinstance(payload, dict):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the body must be a JSON object")
    return payload


def _transform(channel: Channel, payload: Mapping[str, Any], headers: Mapping[str, str]) -> Inbound:
    try:
        return channel.transform(payload, headers)
    except Exception as exc:  # a badly typed payload (or a channel bug) must not be redelivered
        log.warning(
            "webhook %s: could not transform a payload: %s: %s",
            channel.name, type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "",
        )  # fmt: skip
        log.debug("webhook %s: transform traceback", channel.name, exc_info=True)
        return _UNPROCESSABLE


async def _publish(
    context: WebContext, channel_name: str, inbound: Publish
) -> PublishResult | None:
    try:
        result = await publish_async(inbound.event, runtime=context.runtime_factory())
    except BUS_ERRORS as exc:
        log.warning("webhook %s: publishing failed (%s)", channel_name, type(exc).__name__)
        raise bus_unavailable() from exc
    except InvalidEventError as exc:
        log.error("webhook %s: the channel built an invalid event: %s", channel_name, exc)
        return None
    if not result.duplicate:
        log.info("webhook %s: published %s", channel_name, result.event_id)
    return result


router.add_route("/webhooks/{channel_name}", receive_webhook, methods=["POST"])
router.add_route("/webhooks/{channel_name}/interactions", receive_interaction, methods=["POST"])
router.add_route("/webhooks/{channel_name}/commands", receive_command, methods=["POST"])
