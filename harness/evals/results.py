"""What a run of cases produced, as models (they cross process boundaries with `--parallel`
and are the JSON report): one `Attempt` per case and repeat, one `Grade` per grader."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from harness.observe.usage_report import UsageTotal


class SeenCall(BaseModel, frozen=True):
    """A tool call the agent made, in order."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Grade(BaseModel, frozen=True):
    """One grader's verdict: `grader` names it (`tool_call:read`, `answer.contains`,
    `file:notes.md`, `judge`), `detail` says why it failed (or the judge's reason)."""

    grader: str
    passed: bool
    detail: str = ""


class Transcript(BaseModel, frozen=True):
    """What one case's conversation did: its tool calls, its final answer, how long it took,
    and the tokens and cost of every model call in it, sub-agents' included (the judge's are
    not: it is called outside the fleet, after)."""

    answer: str = ""
    tool_calls: list[SeenCall] = Field(default_factory=list)
    latency_s: float = 0.0
    model: str = ""
    usage: UsageTotal = Field(default_factory=lambda: UsageTotal(group="case"))


class Attempt(BaseModel, frozen=True):
    """One run of one case. `error` is set when the case could not run to its end (the grades
    are then empty and the attempt failed)."""

    suite: str
    case: str
    repeat: int = 0
    transcript: Transcript = Field(default_factory=Transcript)
    grades: list[Grade] = Field(default_factory=list)
    error: str | None = None

    @property
    def passed(self) -> bool:
        """Every grader passed and nothing went wrong."""
        return self.error is None and all(g.passed for g in self.grades)
