"""What a suite file says: cases (user messages, workspace fixtures, setting overrides) and
their graders, read from `evals/*.yaml`.

A suite file is operator-owned (like `.env`), so a case may override settings; the workspace
it builds is a throwaway folder, never the operator's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.errors import ConfigurationError
from harness.settings import Settings


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Predicate(_Strict):
    """A check on one value: `equals` it, its text `contains` a string, or matches `regex`
    (`re.search`). A bare value in YAML means `equals`."""

    equals: Any = None
    contains: str | None = None
    regex: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_means_equals(cls, value: Any) -> Any:
        if isinstance(value, dict) and set(value) <= {"equals", "contains", "regex"}:
            return value
        return {"equals": value}


class ExpectedCall(_Strict):
    """A tool call the agent must make at some point: its `name`, and a predicate per
    argument it names (arguments not named are not checked)."""

    name: str
    args: dict[str, Predicate] = Field(default_factory=dict)


class AnswerCheck(_Strict):
    """Checks on the final answer (the last assistant text): every `contains` string, every
    `regex`, none of `not_contains`, and, with `json_schema`, the answer (or the JSON inside
    a fenced block of it) validates against that schema."""

    contains: list[str] = Field(default_factory=list)
    not_contains: list[str] = Field(default_factory=list)
    regex: list[str] = Field(default_factory=list)
    json_schema: dict[str, Any] | None = None


class FileCheck(_Strict):
    """A workspace file that must exist after the case, containing `contains` when given;
    with `absent`, one that must not exist."""

    path: str
    contains: str | None = None
    absent: bool = False


class JudgeCheck(_Strict):
    """An LLM judge: `rubric` is given with the conversation to `model` (the run's model when
    unset), which answers a verdict and a reason."""

    rubric: str
    model: str | None = None


class Expect(_Strict):
    """Every grader of a case. `forbidden_tools` are tool names the agent must not call."""

    tool_calls: list[ExpectedCall] = Field(default_factory=list)
    forbidden_tools: list[str] = Field(default_factory=list)
    answer: AnswerCheck | None = None
    files: list[FileCheck] = Field(default_factory=list)
    judge: JudgeCheck | None = None


class ScriptedStep(_Strict):
    """One reply of the scripted model (CI only; ignored against a real model): a `tool` call
    with `args`, or an `answer`."""

    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    answer: str | None = None


class Case(_Strict):
    """One conversation and its graders. `workspace` maps relative paths to file contents
    written before the first message; `settings` overrides settings (e.g. `agent_allow_shell`)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    description: str = ""
    messages: list[str] = Field(min_length=1)
    workspace: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    expect: Expect
    scripted: list[ScriptedStep] = Field(default_factory=list)

    @field_validator("settings")
    @classmethod
    def _known_settings(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Settings ignore unknown names; a misspelt override would silently test the default.
        unknown = sorted(set(value) - set(Settings.model_fields))
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(unknown)} (use the snake_case names)")
        return value


class Suite(_Strict):
    """A named list of cases, from one file."""

    name: str
    cases: list[Case]
    path: Path | None = None


def load_suite(path: Path) -> Suite:
    """The suite in `path` (named after the file). Raises `ConfigurationError` naming the
    file for unreadable YAML, a wrong shape, or two cases with one id."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        suite = Suite(name=path.stem, path=path, cases=data.get("cases", []))
    except (OSError, yaml.YAMLError, ValidationError, AttributeError) as exc:
        raise ConfigurationError(f"{path}: not a valid eval suite: {exc}") from exc
    ids = [case.id for case in suite.cases]
    if len(ids) != len(set(ids)):
        raise ConfigurationError(f"{path}: case ids repeat: {sorted(ids)}")
    return suite


def find_suites(folder: Path, names: list[str]) -> list[Suite]:
    """The suites named (a file path, or a name of `folder/NAME.yaml`), or every
    `folder/*.yaml` when `names` is empty. Raises `ConfigurationError` for a missing one."""
    if not names:
        paths = sorted(folder.glob("*.yaml"))
        if not paths:
            raise ConfigurationError(f"no eval suites in {folder}")
    else:
        paths = [Path(n) if n.endswith((".yaml", ".yml")) else folder / f"{n}.yaml" for n in names]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ConfigurationError(f"eval suite not found: {', '.join(missing)}")
    return [load_suite(p) for p in paths]
