"""Eval fixtures: settings pointed at the scripted model server, and the scripted replies a
case's `scripted:` block stands for."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.evals.suite import Case
from harness.settings import Settings
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer, Reply

ROOT = Path(__file__).resolve().parents[2]


def scripted(case: Case) -> list[Reply]:
    """The replies of `case`'s `scripted:` block."""
    return [
        Reply.answer(step.answer)
        if step.answer is not None
        else Reply.tool(step.tool or "", step.args)
        for step in case.scripted
    ]


@pytest.fixture
def eval_settings(tmp_path: Path, model_server: ModelServer) -> Settings:
    """Settings for eval runs against the scripted model (each case gets its own workspace)."""
    return make_settings(tmp_path / "unused-workspace", model_server)
