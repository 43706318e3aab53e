"""Sidecar settings, read from the environment and `.env`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class SidecarSettings(BaseSettings):
    """Everything the sidecar reads. Field names map to upper-case variables."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    sidecar_enabled: bool = Field(
        default=True,
        description="Load and run the agent's functions from workspace/functions; false turns "
        "the sidecar into an idle process.",
    )
    sidecar_debounce: float = Field(
        default=2.0, ge=0.0, description="Seconds of quiet in functions/ before a reload."
    )
    sidecar_watch: Literal["auto", "inotify", "poll"] = Field(
        default="auto",
        description="How the sidecar sees changes in workspace/functions: inotify, or poll "
        "(every second) where the folder is on a network file system that another host "
        "writes; auto polls when /proc/self/mountinfo says the folder's mount is NFS, "
        "SMB/CIFS, CephFS, GlusterFS, Lustre, 9p, virtiofs or FUSE.",
    )
    sidecar_run_timeout: float = Field(
        default=300.0,
        gt=0.0,
        description="Seconds one execution of a function may take unless it sets `timeout`.",
    )
    sidecar_queue: str = Field(default="sidecar", description="Celery queue of sidecar runs.")
    sidecar_concurrency: int = Field(default=4, ge=1, le=64)
    sidecar_memory_mb: int = Field(
        default=2048, ge=0, description="Address-space limit of the function host; 0: none."
    )
    sidecar_cpu_seconds: int = Field(
        default=3600,
        ge=0,
        description="CPU seconds one function host may use before it is replaced; 0: no limit.",
    )
    sidecar_sandbox: Literal["auto", "bwrap", "landlock", "off"] = Field(
        default="auto",
        description="OS sandbox of the processes that run functions: auto (bubblewrap where it "
        "runs, else Landlock; where neither runs, functions do not run), bwrap or landlock "
        "(insist on one), off (unconfined, on purpose).",
    )
    sidecar_validate_timeout: float = Field(
        default=15.0, gt=0.0, description="Seconds to load functions/ when validating."
    )
