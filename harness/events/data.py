"""The typed data of the built-in events, one model per event name (`event_name`). The
engine's own (`CronTick`, `FunctionFailed`, `FunctionCancelled`) are declared in
`harness.envelope` and re-exported here."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from harness.addresses import ChannelMeta, Destination, ReplyTarget, Sender
from harness.envelope import CronTick as CronTick
from harness.envelope import FunctionCancelled as FunctionCancelled
from harness.envelope import FunctionFailed as FunctionFailed
from harness.events.commands import parse_command
from harness.events.event import (
    APPROVAL_ANSWERED,
    APPROVAL_CLOSED,
    APPROVAL_GIVEN,
    APPROVAL_REQUESTED,
    FILE_READY,
    MESSAGE_RECEIVED,
    NETWORK_RUN,
    REPLY_READY,
    SUBAGENT_SPAWN,
    TASK_FINISHED,
    EventData,
)
from harness.text import clean_text


class Attachment(BaseModel):
    """A file that came with a message, as the platform describes it, before it is fetched.

    `kind` is what the person sent (photo, document, voice, audio, video, video_note,
    sticker, animation); `ref` is the platform's handle to fetch it by (a Telegram `file_id`,
    a Slack `url_private_download`); `name`, `mime_type` and `size` are the platform's claims,
    checked again when the file is downloaded.
    """

    kind: str
    ref: str
    name: str = ""
    mime_type: str = ""
    size: int | None = None


class MessageReceived(EventData):
    """Data of `agent.message.received`. `message` may be empty when `attachments` is not.

    `command` is the chat command the message is (`harness.events.commands`: `"status"` for
    `/status`), None for an ordinary message; derived from `message` when not given (a
    message with attachments is never a command). A command is answered by
    `agent-chat-command`, never by the chat's turn (whose trigger leaves it out)."""

    event_name: ClassVar[str] = MESSAGE_RECEIVED

    message: str
    session_key: str = Field(min_length=1, max_length=300)
    channel: str = Field(min_length=1)
    sender: Sender
    destination: Destination
    channel_meta: ChannelMeta = Field(default_factory=ChannelMeta)
    attachments: list[Attachment] = Field(default_factory=list)
    command: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _command(cls, data: Any) -> Any:
        if isinstance(data, dict) and "command" not in data and not data.get("attachments"):
            parsed = parse_command(str(data.get("message") or ""))
            if parsed is not None:
                return {**data, "command": parsed.name}
        return data

    @field_validator("message")
    @classmethod
    def _encodable(cls, message: str) -> str:
        # whatever path it came by (webhook, polling, the HTTP API), a lone surrogate would
        # fail the turn at its first UTF-8 encode; replace it here, at the edge
        return clean_text(message)


class ReplyReady(EventData):
    """Data of `agent.reply.ready`."""

    event_name: ClassVar[str] = REPLY_READY

    response: str
    channel: str
    destination: Destination
    channel_meta: ChannelMeta = Field(default_factory=ChannelMeta)
    run_id: str


class FileReady(EventData):
    """Data of `agent.file.ready`: a workspace file the agent sends to a conversation.
    `path` is absolute, checked to lie inside the workspace when the event was made."""

    event_name: ClassVar[str] = FILE_READY

    path: str
    name: str
    mime_type: str = "application/octet-stream"
    caption: str = ""
    channel: str
    destination: Destination
    channel_meta: ChannelMeta = Field(default_factory=ChannelMeta)


class SharedState(BaseModel):
    """A network run's shared state as one of its agents gets it: the network's name, the
    state's JSON Schema and its data when the agent started."""

    network: str
    state_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    data: dict[str, Any] = Field(default_factory=dict)


class SubagentTask(EventData):
    """Data of `agent.subagent.spawn`, and the input of an invoked sub-agent: a task, when to
    start it (ISO 8601, optional) and where to send the answer (None: return it instead).
    `ask_in` is where to ask a person to approve a risky call when `reply` is None (the
    parent's chat)."""

    event_name: ClassVar[str] = SUBAGENT_SPAWN

    task: str = ""
    scheduled_for: str | None = None
    reply: ReplyTarget | None = None
    ask_in: ReplyTarget | None = None
    agent: str | None = Field(default=None, max_length=40)
    """The named agent to run (`workspace/agents/<agent>/AGENT.md`); None: an anonymous
    sub-agent with the default sub-agent tools."""
    background: bool = False
    """A background task (`delegate_to_<agent>` with `background`): the child publishes
    `agent.task.finished` with its answer when it ends."""
    parent_session: str | None = Field(default=None, max_length=300)
    """The chat session of the run that delegated: its later turns may check, wait for and
    cancel the task."""
    depth: int = Field(default=0, ge=0, le=100)
    """How many named delegations led to this one (0: the chat's agent delegated), so a ring
    of agents that delegate to each other stops."""
    network_state: SharedState | None = None
    """Set when a network runs the agent: it gets `state_get` / `state_set` over this state,
    and returns its writes (`state_updates`) with its answer."""
    output_schema: dict[str, Any] | None = None
    """The JSON Schema the answer must be valid against (a function's `run_agent(output=...)`):
    when set it wins over the agent file's own `output_schema`."""


class TaskFinished(EventData):
    """Data of `agent.task.finished`, published once for every ending of a background
    delegation (`run_id`, the child's run; `harness.agent.task_endings`): `status` completed
    with `answer`, or failed or cancelled with `error`. `cost_usd` is what the child's model
    calls cost, its own delegations' included (a failed or cancelled child's as its recorded
    model steps say, `task_endings.spent_usd`)."""

    event_name: ClassVar[str] = TASK_FINISHED

    run_id: str = Field(min_length=1, max_length=64)
    agent: str = ""
    status: Literal["completed", "failed", "cancelled"] = "completed"
    answer: str = ""
    error: str = ""
    cost_usd: float = 0.0
    read_outside: str | None = None
    """The first outside content the child read (its answer may carry it), else None."""


class NetworkRun(EventData):
    """Data of `agent.network.run`: run the network `network` (`workspace/networks/<network>.md`)
    on `task`, from `state` (default: empty); the final answer goes to `reply` when given.
    Its agents ask approvals in `ask_in` (default: `reply`): a chat turn that posts the answer
    itself gives `ask_in` and no `reply`."""

    event_name: ClassVar[str] = NETWORK_RUN

    network: str = Field(min_length=1, max_length=40)
    task: str = Field(default="", max_length=100_000)
    reply: ReplyTarget | None = None
    ask_in: ReplyTarget | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class ApprovalRequested(EventData):
    """Data of `agent.approval.requested`: a tool call waits for a person's yes. `summary` is
    what to show (the command, the path and the change); `approvers` the subjects that may
    answer (empty: anyone who can reach the request); `timeout` how long it waits;
    `unattended` the answer when the request cannot be shown (the asking run's
    `AGENT_APPROVAL_UNATTENDED`: `ask` reads as `deny` here). `owner` is the owner's subject
    when the request is asked of the owner for a run nobody else can answer (its `reply` is
    then the owner's direct chat, `harness.agent.approvals.owner_request`); empty when it is
    asked in the run's own chat."""

    event_name: ClassVar[str] = APPROVAL_REQUESTED

    approval_id: str = Field(min_length=1, max_length=64)
    run_id: str
    tool: str
    summary: str
    reply: ReplyTarget
    approvers: list[str] = Field(default_factory=list)
    timeout: str = "30m"
    unattended: Literal["deny", "allow"] = "deny"
    owner: str = ""


OPERATOR_SUBJECT = "dashboard:operator"
OPERATOR_CHANNEL = "dashboard"
"""Who answers from the console, and on which channel: the only answer that may override."""


class ApprovalGiven(EventData):
    """Data of `agent.approval.given`: a person pressed a button (not yet checked: the
    `approval-answer` function decides whether it counts). `subject` is who pressed, as the
    channel verified it (`telegram:user:7`); `channel_meta` what the channel needs to answer
    the click (callback id, the request's message). `allowlisted` is True when the channel's
    own allowlist (TELEGRAM_ALLOWED_CHATS, SLACK_ALLOWED_CHANNELS) names that person.
    `override` is the operator answering from the console a request that names approvers
    (`ApprovalStore.answer`); the event is invalid with it from any other subject or channel,
    so no chat press, typed answer or chat client can carry it (and a workspace function may
    publish no `agent.approval.given` at all: `harness.sidecar.publish_policy`)."""

    event_name: ClassVar[str] = APPROVAL_GIVEN

    approval_id: str = Field(min_length=1, max_length=64)
    decision: Literal["approve", "deny", "session"]
    subject: str
    label: str = ""
    channel: str
    destination: Destination
    channel_meta: ChannelMeta = Field(default_factory=ChannelMeta)
    allowlisted: bool = False
    override: bool = False

    @model_validator(mode="after")
    def _override_is_the_operators(self) -> ApprovalGiven:
        if self.override and (self.subject, self.channel) != (OPERATOR_SUBJECT, OPERATOR_CHANNEL):
            raise ValueError(
                f"override: only subject {OPERATOR_SUBJECT!r} on channel {OPERATOR_CHANNEL!r} "
                "(the console) may override a request's approvers"
            )
        return self

    @property
    def by_operator(self) -> bool:
        """True for the console operator's override only; checked again on every read (not
        only at validation, which `model_construct` skips), so no other answer skips the
        approvers."""
        operator = (self.subject, self.channel) == (OPERATOR_SUBJECT, OPERATOR_CHANNEL)
        return self.override and operator


class ApprovalAnswered(EventData):
    """Data of `agent.approval.answered`: the answer that counts, published once per request,
    to wake the run that waits for it. `at` is ms since the epoch."""

    event_name: ClassVar[str] = APPROVAL_ANSWERED

    approval_id: str = Field(min_length=1, max_length=64)
    decision: Literal["approve", "deny", "session"]
    by: str
    at: int


class ApprovalClosed(EventData):
    """Data of `agent.approval.closed`: a request ended without an answer (it expired, or its
    run was cancelled); `reason` is the line to show on the request in the chat."""

    event_name: ClassVar[str] = APPROVAL_CLOSED

    approval_id: str = Field(min_length=1, max_length=64)
    reason: str
