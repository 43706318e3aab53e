"""The engine's configuration: the fields `harness.runtime` reads, from the environment and
`.env`. A fleet's `harness.settings.Settings` inherits them, so one environment serves both;
a process that runs the engine alone reads only these (`engine_settings`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from harness.settings_errors import read_settings


class EngineSettings(BaseSettings):
    """Where the bus is (Redis, or Sentinel) and how runs are kept and retried. Field names map
    to upper-case environment variables."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    redis_url: str | None = Field(
        default=None,
        description="Redis to use; unset starts an embedded Redis in the state folder.",
    )
    redis_sentinels: str = Field(
        default="",
        description="Comma-separated host:port of Redis Sentinels; set, every Redis client "
        "and Celery's broker find the master through them (REDIS_URL is then unused).",
    )
    redis_sentinel_master: str = Field(
        default="", description="The master's name in Sentinel (required with REDIS_SENTINELS)."
    )
    redis_sentinel_password: SecretStr | None = Field(
        default=None, description="Password of the Sentinels themselves, if they require one."
    )
    redis_password: SecretStr | None = Field(
        default=None,
        description="Password of the master found through Sentinel (with REDIS_URL, put it "
        "in the URL instead).",
    )
    redis_sentinel_tls: bool = Field(
        default=False,
        description="TLS to the Sentinels and to the master and replicas they name (with "
        "REDIS_URL, use `rediss://` instead).",
    )
    redis_sentinel_tls_ca_certs: Path | None = Field(
        default=None,
        description="PEM file of the CAs that sign the Sentinels' and servers' certificates; "
        "unset: the system's trust store.",
    )
    redis_sentinel_tls_certfile: Path | None = Field(
        default=None,
        description="Client certificate (PEM) for servers that require one (Redis's "
        "`tls-auth-clients yes`); with REDIS_SENTINEL_TLS_KEYFILE.",
    )
    redis_sentinel_tls_keyfile: Path | None = Field(
        default=None, description="Private key (PEM) of REDIS_SENTINEL_TLS_CERTFILE."
    )
    redis_sentinel_tls_check_hostname: bool = Field(
        default=True,
        description="Check that a server's certificate names the host it was reached at (the "
        "address the Sentinels announce); turn off only for certificates without it.",
    )
    redis_wait_replicas: int = Field(
        default=0,
        ge=0,
        description="Replicas that must hold a message before its webhook is answered 200 "
        "(Redis WAIT); fewer within REDIS_WAIT_TIMEOUT_MS answers 503 and the platform retries.",
    )
    redis_wait_timeout_ms: int = Field(
        default=1000, ge=1, description="How long a webhook waits for REDIS_WAIT_REPLICAS."
    )
    harness_shared_root: Path | None = Field(
        default=None,
        description="The folder every host of a fleet mounts at the same path (NFS, CephFS, "
        "EFS...): the workspace defaults to `<root>/workspace` and the state folder "
        "(transcripts, per-chat memory) to `<root>/state`, and file locks become Redis locks "
        "keyed by the path under it. Unset: one host.",
    )
    agent_workspace: Path = Field(default=Path("./workspace"))
    harness_state_dir: Path | None = Field(
        default=None,
        description="The runtime's own files (embedded Redis data, password, transcripts); "
        "unset: `<HARNESS_SHARED_ROOT>/state`, else `.harness` beside the workspace, outside "
        "the agent's reach.",
    )
    log_level: str = Field(default="INFO")

    worker_concurrency: int = Field(default=16, ge=1, le=512)
    harness_lease_ttl: float = Field(
        default=10.0, gt=0.5, description="Seconds a run's lease lives without renewal."
    )
    harness_reaper_interval: float = Field(default=1.0, gt=0.0)
    harness_retry_backoff: float = Field(
        default=1.0, ge=0.0, description="Base of the exponential backoff between retries, seconds."
    )
    harness_events_maxlen: int = Field(default=10_000, ge=100)
    harness_key_prefix: str = Field(default="harness")
    run_retention_days: int = Field(
        default=7, ge=1, description="Run records and step journals expire this long after."
    )

    @field_validator("harness_state_dir", "harness_shared_root", "redis_url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _workspace_under_shared_root(self) -> Self:
        # An explicit AGENT_WORKSPACE wins; the shared root only moves the default.
        if self.harness_shared_root is not None and "agent_workspace" not in self.model_fields_set:
            self.agent_workspace = self.harness_shared_root / "workspace"
        return self


@lru_cache(maxsize=1)
def engine_settings() -> EngineSettings:
    """The engine's settings of a process that runs the engine alone, read on first use.
    Raises `InvalidSettingsError` (one line per bad variable)."""
    return read_settings(EngineSettings)
