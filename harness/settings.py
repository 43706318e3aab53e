"""The core configuration, read once from the environment and `.env`.

It knows no platform: each channel reads its own settings class
(`channels/<platform>/settings.py`) from the same environment and `.env`. Every field is
listed with its default in `.env.example` and the README.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from harness.agent.roster.bindings import parse_bindings
from harness.llm.price_overrides import apply as apply_prices
from harness.llm.settings import ModelSettings
from harness.owner import parse_owner
from harness.runtime.functions import check_cron_expression, check_time_zone
from harness.runtime.settings import EngineSettings
from harness.settings_errors import read_settings
from harness.sidecar.settings import SidecarSettings

OnNewMessage = Literal["steer", "cancel", "queue"]
DmPolicy = Literal["pairing", "allowlist", "open"]
ApprovalMode = Literal["off", "risky", "all"]
MemoryScope = Literal["shared", "per-chat", "per-person"]


class Settings(EngineSettings, ModelSettings, SidecarSettings):
    """The fleet's configuration. Field names map to upper-case environment variables.

    The engine's, the model's and the sidecar's fields are declared next to the code that
    reads them (`harness.runtime.settings`, `harness.llm.settings`,
    `harness.sidecar.settings`) and inherited here. Channel settings
    are not here: a channel reads its own (`TelegramSettings`, `SlackSettings`) when it is
    loaded, so the core imports no platform.
    """

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    mcp_config: Path = Field(
        default=Path("mcp.json"),
        description="The operator's MCP servers file (relative: to the folder the fleet runs "
        "in, beside `.env`); refused when it lies inside the workspace.",
    )
    agent_name: str = Field(default="Harness")
    port: int = Field(default=8000, ge=1, le=65535)
    host: str = Field(
        default="127.0.0.1",
        description="Address the web server binds: 127.0.0.1 keeps it on this machine; the "
        "Procfile's web passes --host 0.0.0.0 to take traffic from outside.",
    )
    web_body_timeout: float = Field(
        default=10.0, gt=0.0, description="Seconds to receive a whole request body, else 408."
    )
    web_header_timeout: float = Field(
        default=10.0,
        gt=0.0,
        description="Seconds to receive a request's line and headers, else 408 and the "
        "connection closed (a client sending them byte by byte does not hold it open).",
    )
    harness_api_key: SecretStr | None = Field(
        default=None, description="Bearer token for the HTTP API; unset disables it."
    )
    public_url: str | None = Field(
        default=None,
        description="Public base URL of the web server (for `harness setup`); https marks "
        "the dashboard's cookie Secure.",
    )
    web_api_docs: bool = Field(
        default=False,
        description="Serve the API's schema and docs (/openapi.json, /docs, /redoc), to anyone "
        "who can reach the web server; off, they are 404.",
    )
    on_new_message: OnNewMessage = Field(default="steer")
    stream_replies: bool = Field(
        default=True,
        description="Show answers as they are written: a growing draft on the chat platforms "
        "that allow it, deltas on /api/chat and in `harness chat`. Channels may override it.",
    )
    model_calls: Literal["inline", "gateway"] = Field(
        default="gateway",
        description="Where a turn's model calls are made: inline (the worker thread waits on "
        "the model) or gateway (the run parks and a model gateway makes the call on the async "
        "SDK clients, so a waiting call holds no worker thread: `harness gateway`, as `harness "
        "up` runs it, or a thread of each worker started without `--no-gateway`).",
    )
    model_gateway_concurrency: int = Field(
        default=256,
        ge=1,
        description="Model calls one model gateway makes at once (MODEL_CALLS=gateway); more "
        "wait in Redis for a free slot, never fail.",
    )
    dm_policy: DmPolicy = Field(
        default="pairing",
        description="Who may talk to the bot: pairing (approve codes), allowlist, or open.",
    )

    harness_function_modules: str = Field(
        default="",
        description="Comma-separated Python modules whose @function declarations workers load.",
    )

    agent_max_iterations: int = Field(default=20, ge=1, le=200)
    agent_context_tokens: int = Field(default=150_000, ge=4_000)
    agent_allow_shell: bool = Field(default=True)
    agent_workspace_hooks: bool = Field(
        default=False,
        description="Call the agent's own hook functions in workspace/functions/ (served by "
        "the sidecar): `hook-before-tool`/`hook-after-tool` are invoked around each tool call "
        "(one invoke each); `hook-on-start`, `hook-before-model`, `hook-after-model`, "
        "`hook-on-finish` are started without waiting and change nothing.",
    )
    agent_parallel_tools: bool = Field(
        default=True,
        description="Run the independent tool calls of one model reply at once (up to 4), "
        "approvals asked first, in order; false runs each call in turn, as before.",
    )
    agent_shell_sandbox: Literal["auto", "bwrap", "landlock", "off"] = Field(
        default="auto",
        description="How bash is confined: auto uses bubblewrap, else Landlock (bash is "
        "disabled if neither can run); bwrap or landlock insists on one; off runs commands "
        "unconfined.",
    )
    agent_shell_network: bool = Field(
        default=True, description="false gives sandboxed commands no network at all."
    )
    agent_shell_env: str = Field(
        default="",
        description="Comma-separated host environment variables passed to bash commands.",
    )
    agent_shell_max_file_mb: int = Field(
        default=100, ge=1, description="Largest file a bash command may write, MB."
    )
    agent_shell_max_memory_mb: int = Field(
        default=2048, ge=64, description="Address space of each bash process, MB."
    )
    agent_shell_max_cpu_seconds: int = Field(
        default=600,
        ge=1,
        description="CPU seconds of each bash process (lowered to the call's timeout).",
    )
    agent_shell_max_processes: int = Field(
        default=256,
        ge=16,
        description="Processes and threads one bash command may have at once (a pids cgroup "
        "where the machine offers one; otherwise only RLIMIT_NPROC).",
    )
    agent_fetch_private_networks: bool = Field(
        default=False, description="Let web_fetch reach loopback and private addresses."
    )
    agent_timezone: str = Field(default="UTC", description="IANA zone for times and daily logs.")
    agent_approval: ApprovalMode = Field(
        default="risky",
        description="Which tool calls wait for a person's yes: off, risky (bash, writes in "
        "functions/, scheduled delegation) or all.",
    )
    agent_approval_allow: str = Field(
        default="",
        description="Comma-separated bash commands or patterns that never ask, matched word by "
        "word (fnmatch per word); a wildcard never allows a program that runs others.",
    )
    agent_approval_timeout: str = Field(
        default="30m", description="How long a request waits for an answer (then: denied)."
    )
    agent_approval_unattended: Literal["deny", "ask", "allow"] = Field(
        default="ask",
        description="What a risky call does when nobody can be asked in its run (cron, "
        "functions, harness send): ask the owner in their direct chat and wait (ask), deny "
        "it, or allow it.",
    )
    agent_owner: str = Field(
        default="",
        description="The owner, who answers for the fleet when nobody else can (an unattended "
        "turn's approvals, budget raises, owner-only chat commands): a person as "
        "<channel>:user:<id>, e.g. telegram:user:123456789. Empty: whoever paired first.",
    )
    agent_approval_group_answer: Literal["sender", "allowed"] = Field(
        default="sender",
        description="Who answers a request in a group: the sender of the message, or also "
        "any allowed user (in the channel's allowlist or paired).",
    )
    eval_judge_model: str | None = Field(
        default=None,
        description="Model of `harness eval`'s LLM judge when a case names none; unset means "
        "the agent's model (same provider and key).",
    )
    agent_memory_scope: MemoryScope = Field(
        default="shared",
        description="shared: one memory for the agent; per-chat: one per conversation; "
        "per-person: one per person (the sender's id), across the chats they write in.",
    )
    search_rescan: float = Field(
        default=60.0,
        ge=0.0,
        description="Seconds after which the search tool lists every file of a corpus again, "
        "the bound on finding a change its file watcher cannot see (another host writing a "
        "network mount); 0 starts no watcher and checks every file before every query.",
    )
    agent_delegate_prefix: str = Field(
        default="delegate_to_",
        pattern=r"^[a-zA-Z][a-zA-Z0-9_-]{0,19}$",
        description="Prefix of the tool that delegates to a named agent: delegate_to_<name>.",
    )
    agent_bindings: str = Field(
        default="",
        description="Which named agent or network answers where: comma-separated "
        "channel[@team][:chat_id[:sender]]=agent (or =network:<name>) entries (`*` for any "
        "chat); the most specific match wins, and these win over the agents' and networks' "
        "own `bindings:` at equal specificity. Unset: only the files bind.",
        examples=["slack:C0123=researcher, telegram=coder, slack:*:U777=network:triage"],
    )

    heartbeat_cron: str = Field(
        default="*/30 * * * *", description="When agent-heartbeat checks the logs (AGENT_TIMEZONE)."
    )
    heartbeat_min_bytes: int = Field(
        default=4096, ge=1, description="New log bytes that make the heartbeat distil at once."
    )
    heartbeat_max_age: str = Field(
        default="8h",
        description="Distil anything new once this long (e.g. 8h, 90m) has passed since the last.",
    )
    delivery_retry_for: str = Field(
        default="10m",
        description="Keep retrying a reply the platform refuses for this long (e.g. 10m, 1h), "
        "then record it as undelivered; it goes out when the person writes next.",
    )
    memory_max_shrink: float = Field(
        default=0.5, gt=0.0, le=1.0, description="Hold back a distillation dropping more text."
    )
    memory_retention_days: int = Field(
        default=30, ge=1, description="Delete daily logs older than this once fully distilled."
    )
    usage_retention_days: int = Field(
        default=90, ge=1, description="Per-day token and cost totals are kept this long."
    )
    budget_daily_usd_per_person: float | None = Field(
        default=None,
        gt=0,
        description="Most one person's turns may cost a UTC day, in USD "
        "(list prices, MODEL_PRICES); unset: no limit.",
    )
    budget_daily_usd_per_chat: float | None = Field(
        default=None, gt=0, description="Most one chat may cost a UTC day, in USD; unset: no limit."
    )
    budget_daily_usd_per_agent: float | None = Field(
        default=None,
        gt=0,
        description="Most one agent (roster name; main for the default) may cost a UTC "
        "day, in USD; unset: no limit.",
    )
    budget_daily_tokens_per_person: int | None = Field(
        default=None,
        gt=0,
        description="Most tokens (input, output and cache) one person's turns "
        "may use a UTC day; unset: no limit.",
    )
    budget_daily_tokens_per_chat: int | None = Field(
        default=None, gt=0, description="Most tokens one chat may use a UTC day; unset: no limit."
    )
    budget_daily_tokens_per_agent: int | None = Field(
        default=None, gt=0, description="Most tokens one agent may use a UTC day; unset: no limit."
    )
    rate_limit_per_minute: int | None = Field(
        default=None,
        gt=0,
        description="Most messages one person may send a minute; more are answered with one "
        "polite 'slow down' and not served. The owner is exempt. Unset: no limit.",
    )
    model_prices: str = Field(
        default="",
        description="Extra or overriding model prices: a JSON file path or inline JSON "
        '{"model": {"input": 1.0, "output": 5.0, ...}} in USD per million tokens.',
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="text (human-readable) or json (one object per line)."
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="Bearer token `/metrics` requires; unset: `/metrics` is open (serve it on "
        "an internal network only, docs/observability.md).",
    )
    health_dir: Path | None = Field(
        default=None,
        description="Folder of the worker's, scheduler's and sidecar's liveness files "
        "(`harness health`); unset: `<state dir>/health`.",
    )
    health_max_age: float = Field(
        default=30.0,
        ge=3.0,
        description="Seconds after which a process whose liveness file was not touched is "
        "reported dead by `harness health`.",
    )

    media_max_bytes: int = Field(
        default=20 * 1024 * 1024, ge=1024, description="Largest file a person may send, bytes."
    )
    media_images: bool = Field(
        default=True, description="Show photos to the model as images (false for text models)."
    )
    media_inline_chars: int = Field(
        default=20_000, ge=0, description="Text files and PDF text up to this are inlined."
    )
    transcribe_provider: Literal["none", "openai"] = Field(
        default="none", description="openai transcribes voice notes and audio."
    )
    transcribe_model: str = Field(default="whisper-1")
    embeddings_provider: Literal["none", "openai"] = Field(
        default="none",
        description="openai: the search tool also ranks by meaning (embeddings from any "
        "OpenAI-compatible endpoint, fused with BM25); none: BM25 alone.",
    )
    embeddings_model: str = Field(default="text-embedding-3-small")
    embeddings_base_url: str | None = Field(
        default=None, description="An OpenAI-compatible embeddings endpoint, ending in /v1."
    )
    embeddings_api_key: SecretStr | None = Field(
        default=None,
        description="The embeddings endpoint's key. Unset: OPENAI_API_KEY, only while "
        "EMBEDDINGS_BASE_URL is unset or equals OPENAI_BASE_URL (another endpoint needs its own).",
    )

    @field_validator("agent_owner")
    @classmethod
    def _owner_is_a_person(cls, value: str) -> str:
        if value.strip():
            parse_owner(value)
        return value.strip()

    @field_validator("heartbeat_cron")
    @classmethod
    def _cron_parses(cls, expression: str) -> str:
        # Refused here, at load, rather than by the worker when it declares the heartbeat.
        return check_cron_expression(expression.strip())

    @field_validator("agent_timezone")
    @classmethod
    def _zone_exists(cls, tz: str) -> str:
        return check_time_zone(tz.strip())

    @field_validator("agent_bindings")
    @classmethod
    def _bindings_parse(cls, text: str) -> str:
        parse_bindings(text)  # a ValueError names the bad entry
        return text


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read on first use. Raises `InvalidSettingsError` (one line
    per bad variable) when the environment or `.env` holds a value that does not validate."""
    settings = read_settings(Settings)
    apply_prices(settings.model_prices)
    return settings
