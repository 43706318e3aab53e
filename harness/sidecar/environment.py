"""What the sidecar's processes get: environments and resource limits (their OS sandbox is
`sandbox.py`).

Two environments, both built from an allowlist, minus every variable whose name mentions a
key, token, secret or password and every `SecretStr` setting:

- `function_environment`, for every process that imports a file of `functions/` (the
  function host, the validator): no credential at all, not even the bus. Such code reaches
  the fleet only through the trusted executor, which journals its steps and publishes its
  events (see `host.py`).
- `executor_environment`, for the trusted executor, which imports no agent code: the same,
  plus the fleet's settings (`DM_POLICY` and the channels' allowlists among them: which chats
  a function's message may be answered in) and the bus (`REDIS_URL`, or the Sentinel
  settings and their passwords). A function talks to people through events, never with the
  platform tokens.
"""

from __future__ import annotations

import os
import re
import resource
import sys
from collections.abc import Mapping

from pydantic import SecretStr

from harness.settings import Settings
from harness.sidecar.served_chats import allowlist_environment

READY_FD_ENV = "HARNESS_SIDECAR_READY_FD"
"""The executor's variable naming the pipe on which it says "ready" (here, not in the
executor, so that the supervisor need not import the executor's Celery to name it)."""
_FUNCTION_ALLOWED = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|TZ|TMPDIR|TERM|VIRTUAL_ENV|PYTHONPATH"
    r"|LC_\w+|AGENT_WORKSPACE|AGENT_TIMEZONE|AGENT_NAME|LOG_LEVEL|LOG_FORMAT"
    r"|(?i:https?_proxy|no_proxy)|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE)$"
)
_EXECUTOR_ALLOWED = re.compile(r"^(HARNESS_\w+|SIDECAR_\w+)$")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def secret_setting_names() -> frozenset[str]:
    """Environment names of every setting declared as a `SecretStr`."""
    names = set()
    for name, info in Settings.model_fields.items():
        if SecretStr in _types_of(info.annotation):
            names.add(name.upper())
    return frozenset(names)


def _types_of(annotation: object) -> set[object]:
    args = getattr(annotation, "__args__", None)
    return {annotation} if not args else {a for arg in args for a in _types_of(arg)}


def _allowed(base: Mapping[str, str], allowed: re.Pattern[str]) -> dict[str, str]:
    secret = secret_setting_names()
    return {
        name: value
        for name, value in base.items()
        if allowed.match(name) and name not in secret and not _SECRET_NAME.search(name)
    }


def function_environment(settings: Settings, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of a process that imports agent-written code, built from `base`
    (usually `os.environ`): allowlisted names only, no secret and no way to the bus, and the
    few settings such a process reads written out (it never reads the project's `.env`)."""
    env = _allowed(base, _FUNCTION_ALLOWED)
    env.update(
        AGENT_WORKSPACE=str(settings.agent_workspace.resolve()),
        LOG_LEVEL=settings.log_level,
        LOG_FORMAT=settings.log_format,
        SIDECAR_MEMORY_MB=str(settings.sidecar_memory_mb),
        SIDECAR_CPU_SECONDS=str(settings.sidecar_cpu_seconds),
        PYTHONUNBUFFERED="1",
        MALLOC_ARENA_MAX="2",  # glibc reserves 64 MiB per thread otherwise, against RLIMIT_AS
    )
    env.setdefault("PATH", os.defpath)
    return env


def executor_environment(
    settings: Settings, redis_url: str, base: Mapping[str, str]
) -> dict[str, str]:
    """The environment of the sidecar's trusted executor: `function_environment`, the
    harness's and sidecar's own variables (secrets still dropped), the settings it reads
    written out, and the bus (`redis_environment`)."""
    env = function_environment(settings, base)
    env.update(_allowed(base, _EXECUTOR_ALLOWED))
    env.update(redis_environment(settings, redis_url))
    env.update(allowlist_environment())  # which chats a function's message may be answered in
    env.update(
        DM_POLICY=settings.dm_policy,
        HARNESS_KEY_PREFIX=settings.harness_key_prefix,
        HARNESS_LEASE_TTL=str(settings.harness_lease_ttl),
        HARNESS_RETRY_BACKOFF=str(settings.harness_retry_backoff),
        HARNESS_EVENTS_MAXLEN=str(settings.harness_events_maxlen),
        SIDECAR_QUEUE=settings.sidecar_queue,
        SIDECAR_RUN_TIMEOUT=str(settings.sidecar_run_timeout),
        SIDECAR_CONCURRENCY=str(settings.sidecar_concurrency),
        SIDECAR_SANDBOX=settings.sidecar_sandbox,
        AGENT_SHELL_NETWORK=str(settings.agent_shell_network).lower(),  # functions' network
    )
    return env


def redis_environment(settings: Settings, redis_url: str) -> dict[str, str]:
    """How the executor reaches Redis: `REDIS_URL`, or the Sentinel settings (passwords
    included, as the password inside `REDIS_URL`)."""
    if not settings.redis_sentinels.strip():
        return {"REDIS_URL": redis_url}
    env = {
        "REDIS_SENTINELS": settings.redis_sentinels,
        "REDIS_SENTINEL_MASTER": settings.redis_sentinel_master,
    }
    if settings.redis_password is not None:
        env["REDIS_PASSWORD"] = settings.redis_password.get_secret_value()
    if settings.redis_sentinel_password is not None:
        env["REDIS_SENTINEL_PASSWORD"] = settings.redis_sentinel_password.get_secret_value()
    if settings.redis_sentinel_tls:
        env["REDIS_SENTINEL_TLS"] = "true"
        env["REDIS_SENTINEL_TLS_CHECK_HOSTNAME"] = str(
            settings.redis_sentinel_tls_check_hostname
        ).lower()
        for name, path in (
            ("REDIS_SENTINEL_TLS_CA_CERTS", settings.redis_sentinel_tls_ca_certs),
            ("REDIS_SENTINEL_TLS_CERTFILE", settings.redis_sentinel_tls_certfile),
            ("REDIS_SENTINEL_TLS_KEYFILE", settings.redis_sentinel_tls_keyfile),
        ):
            if path is not None:
                env[name] = str(path.resolve())
    return env


def python_command(module: str, *args: str) -> list[str]:
    """`<this python> -m <module> <args>`."""
    return [sys.executable, "-m", module, *args]


def apply_limits(memory_mb: int, cpu_seconds: int) -> None:
    """Bound this process's address space and CPU time (0 leaves a limit as it is). Call
    first thing in a process that will run workspace code. Past the CPU limit the kernel
    sends SIGXCPU, which ends the process; the sidecar then starts a new one."""
    if memory_mb > 0:
        _lower(resource.RLIMIT_AS, memory_mb * 1024 * 1024, 0)
    if cpu_seconds > 0:
        _lower(resource.RLIMIT_CPU, cpu_seconds, 5)


def _lower(limit: int, soft: int, slack: int) -> None:
    _, hard = resource.getrlimit(limit)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
        resource.setrlimit(limit, (soft, hard))
    else:
        resource.setrlimit(limit, (soft, soft + slack))
