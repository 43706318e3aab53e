"""The LLM judge: a rubric and the conversation go to a model, which answers a verdict and a
reason, both recorded in the grade. A model error or an unreadable answer is a failed grade
(with the reason), never an exception: one flaky judge call must not end the suite."""

from __future__ import annotations

import json
import re

from harness.evals.results import Grade, Transcript
from harness.llm.errors import ModelError
from harness.llm.provider import ModelProvider
from harness.llm.types import Message

JUDGE_PROMPT = (
    "You grade an AI agent's work against a rubric. Read the conversation, the agent's tool "
    "calls and its final answer. Answer with one JSON object and nothing else: "
    '{"verdict": "pass" or "fail", "reason": "one sentence"}.'
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def judge(
    provider: ModelProvider, rubric: str, messages: list[str], transcript: Transcript
) -> Grade:
    """Ask `provider` whether `transcript` (the answer to `messages`) meets `rubric`."""
    calls = "\n".join(f"- {c.name} {json.dumps(c.arguments)}" for c in transcript.tool_calls)
    body = (
        f"Rubric:\n{rubric}\n\nUser messages:\n"
        + "\n".join(f"- {m}" for m in messages)
        + f"\n\nTool calls:\n{calls or '(none)'}\n\nFinal answer:\n{transcript.answer}"
    )
    try:
        turn = provider.complete(system=JUDGE_PROMPT, messages=[Message(role="user", text=body)])
    except ModelError as exc:
        return Grade(grader="judge", passed=False, detail=f"judge failed: {exc}")
    return read_verdict(turn.text)


def read_verdict(text: str) -> Grade:
    """The judge's grade from its answer: the first JSON object's `verdict` and `reason`."""
    found = _OBJECT.search(text)
    try:
        data = json.loads(found.group(0)) if found else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("verdict") not in ("pass", "fail"):
        return Grade(grader="judge", passed=False, detail=f"unreadable verdict: {text[:200]!r}")
    return Grade(grader="judge", passed=data["verdict"] == "pass", detail=str(data.get("reason")))
