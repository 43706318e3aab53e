"""The project's error hierarchy. Third-party errors are translated into these at each seam
(redis in `harness/runtime/`, the model SDKs in `harness/llm/`, each platform's API in
`channels/<platform>/api.py`). Families live next to the code that raises them; `[module]`
says where, `+ X` names a second base.

HarnessError
├── ConfigurationError            a setting is missing or wrong
│   ├── InvalidSettingsError          settings failed validation: one readable line per variable
│   ├── NoFleetFoundError             no REDIS_URL, no fleet running (+ BusUnavailableError)
│   └── ChannelNotConfiguredError     [channels/errors.py] a channel's settings are missing
├── BusUnavailableError           the event bus (Redis) failed; every redis-py error becomes one
│   │                                 at the runtime's seam (harness/runtime/bus_errors.py)
│   ├── ReplicationTimeoutError       fewer replicas than REDIS_WAIT_REPLICAS acknowledged in time
│   ├── NoFleetFoundError             + ConfigurationError (above)
│   └── ChatUnavailableError          [harness/chat_client.py] + ChatError
├── InvalidEventError             an event failed validation; nothing was published (+ ValueError)
│   └── InvalidEventDataError         a handler got data that does not fit its model
│                                     (+ NonRetriableError: the run fails without retries)
├── InvalidFunctionError          a function declaration is wrong (bad cron, bad key path, ...)
├── FunctionNotFoundError         a run names a function this process does not know
├── RunNotFoundError              no retained run has this id, or a prefix names several
├── StepError                     a step failed
│   ├── StepFailedError           a step spent its retries; raised into the handler on replay
│   │   └── AgentRunError             an agent a function asked (`harness.agent.api`) failed
│   │       └── AgentAnswerError          its answer cannot fit the output (+ NonRetriableError)
│   ├── StepResultError           a step's result cannot be stored as JSON (+ TypeError)
│   └── NonDeterminismError       the handler asked for steps in another order than recorded
├── NonRetriableError             raise this from a step or handler to fail without retries
│   ├── EventRefusedError         a workspace function may not publish this fleet-only event
│   └── InvokeRefusedError        a workspace function may not invoke this (or with this data)
│   (also a base of ContextOverflowError, PermanentModelError, ModelCancelledError and
│    PermanentPlatformError below)
├── RunTimeoutError               one execution of a function outlived its timeout (sidecar)
├── ChatError                     [harness/chat_client.py] waiting for the agent's reply failed
│   ├── ChatTimeoutError              no reply in time
│   ├── ChatFailedError               the run failed; no reply will come
│   └── ChatUnavailableError          + BusUnavailableError (above)
├── ModelError                    [harness/llm/errors.py] a model provider call failed
│   ├── TransientModelError           worth retrying (rate limit, overload, network)
│   ├── ContextOverflowError          the conversation is too long (+ NonRetriableError)
│   ├── PermanentModelError           bad request, auth, ... (+ NonRetriableError)
│   └── ModelCancelledError           the call was cancelled (+ NonRetriableError)
├── ToolError                     [harness/tools/errors.py] a workspace tool failed
│   └── WorkspaceEscapeError          a path leads outside the workspace (+ ValueError)
└── ChannelError                  [channels/errors.py] a channel failed
    ├── UnknownChannelError           no channel of that name (+ KeyError)
    ├── ChannelNotConfiguredError     + ConfigurationError (above)
    ├── WebhookRejected               a webhook failed verification
    └── PlatformError                 the platform's API failed
        ├── TransientPlatformError        worth retrying
        │   ├── PlatformUnavailable           5xx, network
        │   └── RateLimited                   429, with `retry_after`
        └── PermanentPlatformError        retrying cannot help (+ NonRetriableError)
            ├── MessageFormatError            the platform refused our markup
            ├── MessageRejected               the message was refused (too long, empty)
            ├── AuthenticationError           the token was refused
            └── DestinationError              the chat or thread is gone or closed to us
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every error this project raises on purpose."""


class ConfigurationError(HarnessError):
    """A setting is missing or has a value that cannot work."""


class BusUnavailableError(HarnessError):
    """The event bus (Redis) could not be reached or answered with an error. What was asked
    may or may not have happened; asking again is safe for idempotent operations."""


class ReplicationTimeoutError(BusUnavailableError):
    """An accepted event reached fewer replicas than `REDIS_WAIT_REPLICAS` within the timeout:
    it is on the master but could be lost at a failover. Publishing it again is safe."""


class NoFleetFoundError(ConfigurationError, BusUnavailableError):
    """REDIS_URL is unset and no running fleet was found to talk to: a setting to give, and a
    bus that cannot be reached (the CLI exits 3 for it, as for a Redis that does not answer).
    Several fleets and no way to pick one is a plain `ConfigurationError`."""


class ProcessDiedError(HarnessError):
    """A process's essential thread stopped on its own (the model gateway's, in `harness
    gateway`): the process exits, to be restarted."""


class InvalidSettingsError(ConfigurationError):
    """The environment or `.env` holds values the settings refuse. `problems` has one line
    per variable, naming it in its environment form (`PORT`), saying what is wrong and giving
    an example of a good value; `str()` joins them with "; "."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


class InvalidEventError(HarnessError, ValueError):
    """An event did not validate. Nothing was published."""


class InvalidFunctionError(HarnessError, ValueError):
    """A function declaration is wrong: bad trigger, cron expression or key path."""


class FunctionNotFoundError(HarnessError):
    """A run names a function that no loaded module declares."""


class RunNotFoundError(HarnessError):
    """No retained run has the id (or id prefix) asked for, or a prefix matches several runs;
    the message says which and lists the candidates."""


class StepError(HarnessError):
    """A durable step could not complete."""


class StepFailedError(StepError):
    """A step raised on every attempt. Carries the last error's text."""

    def __init__(self, step_id: str, error: str) -> None:
        super().__init__(f"step {step_id!r} failed: {error}")
        self.step_id = step_id
        self.error = error


class StepResultError(StepError, TypeError):
    """A step returned something that is not JSON-serialisable; the step cannot be recorded."""


class NonDeterminismError(StepError):
    """On replay the handler asked for a step of another kind than the journal holds."""


class NonRetriableError(HarnessError):
    """Raise from a step or a handler to fail at once, skipping remaining retries."""


class InvalidEventDataError(InvalidEventError, NonRetriableError):
    """A received event's data does not fit the model its handler reads it with. Retrying
    cannot help, so the run fails at once."""


class EventRefusedError(NonRetriableError):
    """A workspace function asked to publish an event only the fleet may emit (an approval's
    answer, a reply to a chat, ...). Nothing was published; the run fails without retries."""


class InvokeRefusedError(NonRetriableError):
    """A workspace function asked to invoke a function that is not one of the sidecar's own
    (the agent's handler, a channel's, a built-in), or an agent run with more than its task,
    agent and output schema. Nothing was invoked; the run fails without retries."""


class AgentRunError(StepFailedError):
    """An agent (or network) a function asked for a result (`harness.agent.api.run_agent`)
    failed, did not answer in time, or does not exist; `agent` names it. Like any step's
    failure it fails the function's run at once: the child's end is in the run's journal, so a
    retry would replay it. To try again, catch it and call `run_agent` again (a new child)."""

    def __init__(self, step_id: str, agent: str, error: str) -> None:
        super().__init__(step_id, f"the agent {agent!r} {error}")
        self.agent = agent


class AgentAnswerError(AgentRunError, NonRetriableError):
    """The agent's answer cannot fit the output asked for: it did not match the JSON Schema
    after one correction, or the output model refused the JSON."""


class RunTimeoutError(HarnessError):
    """One execution of a function ran longer than its timeout; the run fails without retries."""
