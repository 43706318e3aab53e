"""A model call offloaded to the model gateway (`MODEL_CALLS=gateway`): what the run records
for the gateway, and what the gateway records back.

The turn's think step asks `step.offload` for the call instead of making it: the run parks
holding no worker, a gateway (`harness.agent.gateway`) makes the call and records its outcome,
and the step's function, replayed, gets that outcome and returns it (or raises its error, so
the step's retry rules apply as they do inline). The request carries all the gateway needs
to make the same call: the model (wire API, name, temperature, output-token limit, never a
credential: the gateway's own settings hold those) and the request itself, and where the text
streams. A field added later has a default, so a request parked by an older worker still loads.

The worker also renders the request as its wire API takes it (`wire`, by the provider's
`prepare`; the client adds the key when it sends), so the gateway reads only the call's head
(`CallHead`) and sends that text as is: no parse of the history into models, no second
rendering, on the one loop that makes every call of the process. The neutral fields stay the
recorded form of the call (and what the gateway renders from when `wire` is absent).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from pydantic import BaseModel

from harness.addresses import ReplyTarget
from harness.llm.errors import (
    ContextOverflowError,
    ModelCancelledError,
    ModelError,
    PermanentModelError,
    TransientModelError,
)
from harness.llm.provider import ModelProvider, TextSink, prepared
from harness.llm.types import AssistantTurn, Message, SystemBlock, ToolSpec
from harness.runtime.steps import Context, Step

log = logging.getLogger(__name__)

MODEL_SERVICE = "model"
"""The offloaded calls' service name (`harness.runtime.calls`) the model gateway takes."""


class DraftTarget(BaseModel, frozen=True):
    """Where an offloaded call's text streams as it is written: the run's live text and draft
    towards `reply` (`drafting.open_live`), as think step `think`, attempt `attempt`."""

    reply: ReplyTarget
    stream_default: bool
    think: int
    attempt: int


class ModelCallRequest(BaseModel, frozen=True):
    """One offloaded model call, as the run records it for the gateway. `max_tokens` is the
    run's provider's limit (a named agent's file may set its own); None (a request parked
    before the field): the gateway's provider's default."""

    run_id: str
    provider: str
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    system: list[SystemBlock]
    messages: list[Message]
    tools: list[ToolSpec]
    tool_choice: str | None = None
    draft: DraftTarget | None = None
    wire: str | None = None


class CallHead(BaseModel, frozen=True):
    """What the gateway reads of a `ModelCallRequest` (the same JSON, the history skipped):
    whose model to call, where the text streams, and `wire`, the request rendered by the
    run's provider (`PreparedModelProvider.prepare`), sent as is. `wire` None: a provider
    that cannot prepare, a request it could not render (the gateway's rendering raises the
    same error as the call's outcome) or one parked before the field."""

    run_id: str
    provider: str
    model: str
    temperature: float | None = None
    draft: DraftTarget | None = None
    wire: str | None = None


def draft_for(
    on_text: TextSink | None,
    reply: ReplyTarget | None,
    stream_default: bool,
    think: int,
    attempt: int,
) -> DraftTarget | None:
    """Where an offloaded think's text streams: where the turn's would (`on_text` is the
    sink its hooks gave the call, None when it does not stream), towards `reply`."""
    if on_text is None or reply is None:
        return None
    return DraftTarget(reply=reply, stream_default=stream_default, think=think, attempt=attempt)


def request_for(
    step: Step,
    run_id: str,
    provider: ModelProvider,
    call: ModelCall,
    draft: DraftTarget | None,
) -> AssistantTurn:
    """Have the gateway make `provider`'s call (`call`: system, messages, tools, tool choice)
    and return its turn; raises the call's `ModelError`, as `provider.complete` would. Parks
    the run (`Suspended`) the first time. Only inside a `run` step's function."""
    system, messages, tools, choice = call
    blocks = [SystemBlock(text=system)] if isinstance(system, str) else list(system)
    blocks = [b for b in blocks if b.text.strip()]
    wire = None
    if prepared(provider):
        with suppress(ValueError):  # the gateway fails the call, as it did before
            wire = provider.prepare(
                system=blocks, messages=messages, tools=tools, tool_choice=choice
            )
    request = ModelCallRequest(
        run_id=run_id,
        provider=provider.name,
        model=provider.model,
        temperature=getattr(provider, "temperature", None),
        max_tokens=getattr(provider, "max_tokens", None),
        system=blocks,
        messages=list(messages),
        tools=list(tools),
        tool_choice=choice,
        draft=draft,
        wire=wire,
    )
    return answer_of(step.offload(MODEL_SERVICE, request.model_dump_json()))


ModelCall = tuple[Sequence[SystemBlock] | str, Sequence[Message], Sequence[ToolSpec], str | None]
"""One model call's system prompt, messages, tools and tool choice."""


def call_model(
    ctx: Context, provider: ModelProvider, offload: bool, call: ModelCall
) -> AssistantTurn:
    """`provider`'s `call`, inside a `run` step's function, streaming nowhere: with `offload`
    (`MODEL_CALLS=gateway`) made by the model gateway while the run parks (`request_for`),
    so no worker thread waits and the worker loads no model SDK; else made here, and
    cancelled with the run. Raises the model layer's errors either way."""
    if offload:
        return request_for(ctx.step, ctx.run_id, provider, call, None)
    system, messages, tools, choice = call
    return provider.complete(
        system=system if isinstance(system, str) else list(system),
        messages=messages,
        tools=tools,
        cancel=ctx.cancelled,
        tool_choice=choice,
    )


@contextmanager
def model_failures(ctx: Context, retry_for: float) -> Iterator[None]:
    """A model call's failures (made here, or by the gateway and recorded) as the step's
    retry rules want them: a cancel stops the run if it was asked to stop; a transient
    failure is retried for `retry_for` seconds (`AGENT_MODEL_RETRY_FOR`) and logged."""
    try:
        yield
    except ModelCancelledError:
        ctx.check_stop()
        raise
    except TransientModelError as exc:
        exc.retry_for = retry_for
        log.warning("model call failed (attempt %d): %s", ctx.attempt + 1, exc)
        raise


def outcome_of(result: AssistantTurn | BaseException) -> dict[str, Any]:
    """The outcome the gateway records: the turn, or the failure with what rebuilds it."""
    if isinstance(result, AssistantTurn):
        return {"v": result.model_dump(mode="json")}
    kind = "transient"
    if isinstance(result, ContextOverflowError):
        kind = "overflow"
    elif isinstance(result, PermanentModelError) or not isinstance(result, ModelError):
        kind = "permanent"  # a request this code cannot make (a bug) fails the same again
    provider = result.provider if isinstance(result, ModelError) else ""
    status = result.status_code if isinstance(result, ModelError) else None
    retry_after = result.retry_after if isinstance(result, TransientModelError) else None
    text = str(result) if isinstance(result, ModelError) else f"{type(result).__name__}: {result}"
    return {"e": text, "kind": kind, "provider": provider, "status": status, "after": retry_after}


def answer_of(outcome: dict[str, Any]) -> AssistantTurn:
    """The turn of a recorded outcome; raises its failure as the `ModelError` it was."""
    if "v" in outcome:
        return AssistantTurn.model_validate(outcome["v"])
    text, provider, status = str(outcome.get("e", "")), str(outcome.get("provider", "")), None
    if isinstance(outcome.get("status"), int):
        status = outcome["status"]
    if outcome.get("kind") == "overflow":
        raise ContextOverflowError(text, provider=provider, status_code=status)
    if outcome.get("kind") == "permanent":
        raise PermanentModelError(text, provider=provider, status_code=status)
    after = outcome.get("after")
    raise TransientModelError(
        text, provider=provider, status_code=status,
        retry_after=float(after) if isinstance(after, int | float) else None,
    )  # fmt: skip
