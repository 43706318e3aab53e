"""Running one case through the fleet's real path: a throwaway workspace and state folder,
the agent's functions on an in-process runtime (its own key prefix on the given Redis,
drained in this thread as a worker would run it), the case's messages published as chat
messages one after the other, then the transcript read back and graded.

Approvals still go through the approval hook: the eval chat has nobody to ask, so its
calls are unattended, and `AGENT_APPROVAL_UNATTENDED` defaults to `allow` here (a case sets
`deny` to see a refusal). The agent's dependencies are process-wide, so one process runs one
case at a time (`--parallel` uses processes).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness.agent.deps import AgentDeps, build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.agent.handlers import handle_message, run_subagent
from harness.agent.session import SessionLine
from harness.agent.task_endings import task_ended
from harness.chat_client import TERMINAL_SENDER, chat_message
from harness.composition import extend_runtime
from harness.evals.graders import grade_answer, grade_calls, grade_files, grade_forbidden
from harness.evals.judge import judge
from harness.evals.results import Attempt, Grade, SeenCall, Transcript
from harness.evals.suite import Case
from harness.llm.factory import build_provider
from harness.observe.usage_report import UsageTotal, totals
from harness.records.usage import usage_store
from harness.runtime import Runtime, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain, forget_runtime, local_runtime
from harness.settings import Settings

SESSION = "eval"
EVAL_DEFAULTS: dict[str, Any] = {"agent_approval_unattended": "allow"}


def run_case(case: Case, suite: str, settings: Settings, redis_url: str, repeat: int) -> Attempt:
    """Run `case` once and grade it. Never raises for what the agent or model did: an error
    ending the case early is recorded in `Attempt.error`."""
    folder = Path(tempfile.mkdtemp(prefix=f"harness-eval-{case.id}-"))
    try:
        return _run(case, suite, _case_settings(case, settings, folder), redis_url, repeat)
    except Exception as exc:  # one broken case must not end the suite
        return Attempt(
            suite=suite, case=case.id, repeat=repeat, error=f"{type(exc).__name__}: {exc}"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _case_settings(case: Case, settings: Settings, folder: Path) -> Settings:
    workspace = folder / "workspace"
    for relative, text in case.workspace.items():
        path = (workspace / relative).resolve()
        if not path.is_relative_to(workspace.resolve()):
            raise ValueError(f"fixture {relative!r} is outside the workspace")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    update = {
        **EVAL_DEFAULTS,
        **case.settings,
        "agent_workspace": workspace,
        "harness_state_dir": folder / "state",
        "mcp_config": folder / "mcp.json",  # none: the operator's MCP servers stay out
    }
    return Settings.model_validate({**settings.model_dump(), **update})


def _run(case: Case, suite: str, settings: Settings, redis_url: str, repeat: int) -> Attempt:
    registry = FunctionRegistry()
    for fn in (handle_message, run_subagent, task_ended):
        registry.register(fn)
    runtime = extend_runtime(local_runtime(redis_url, f"harness-eval:{uuid.uuid4().hex}", registry))
    deps = build_deps(settings)
    set_agent_deps(deps)
    # with MODEL_CALLS=gateway (the default) a model call parks its run: drain makes it here
    runtime.call_servers.append(ModelGateway.drained(runtime, lambda: settings))
    try:
        started = time.perf_counter()
        for text in case.messages:
            publish(
                chat_message(text, SESSION, channel="cli", sender=TERMINAL_SENDER), runtime=runtime
            )
            drain(runtime)
        transcript = _transcript(deps, runtime, time.perf_counter() - started)
        grades = _grade(case, transcript, settings)
    finally:
        set_agent_deps(None)
        forget_runtime(runtime)
    return Attempt(suite=suite, case=case.id, repeat=repeat, transcript=transcript, grades=grades)


def _transcript(deps: AgentDeps, runtime: Runtime, latency_s: float) -> Transcript:
    calls: list[SeenCall] = []
    answer = ""
    for line in deps.sessions.load(SESSION):
        if not isinstance(line, SessionLine) or line.message.role != "assistant":
            continue
        calls += [SeenCall(name=c.name, arguments=c.arguments) for c in line.message.tool_calls]
        if line.message.text.strip():
            answer = line.message.text
    today = datetime.fromtimestamp(runtime.clock(), UTC).date()
    # The case's prefix is its own, so every row is the case's; a case that crossed midnight
    # has rows on two days, summed as one group.
    rows = usage_store(runtime).rows(today - timedelta(days=1), today)
    usage = totals([r.model_copy(update={"day": "case"}) for r in rows], "day")
    return Transcript(
        answer=answer,
        tool_calls=calls,
        latency_s=latency_s,
        model=",".join(sorted({r.model for r in rows})),
        usage=usage[0] if usage else UsageTotal(group="case"),
    )


def _grade(case: Case, transcript: Transcript, settings: Settings) -> list[Grade]:
    expect = case.expect
    grades = grade_calls(expect.tool_calls, transcript.tool_calls)
    grades += grade_forbidden(expect.forbidden_tools, transcript.tool_calls)
    if expect.answer is not None:
        grades += grade_answer(expect.answer, transcript.answer)
    grades += grade_files(expect.files, settings.agent_workspace)
    if expect.judge is not None:
        model = expect.judge.model or settings.eval_judge_model or settings.agent_model
        provider = build_provider(settings.model_copy(update={"agent_model": model}))
        if provider is None:
            grades.append(Grade(grader="judge", passed=False, detail="no model for the judge"))
        else:
            grades.append(judge(provider, expect.judge.rubric, case.messages, transcript))
    return grades
