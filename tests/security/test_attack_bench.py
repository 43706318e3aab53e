"""The attacker's bench itself: a scripted call goes through the webhook, a risky one asks and
runs once pressed, and the canary check sees a leak when there is one."""

from __future__ import annotations

import pytest

from tests.fakes.model_server import Reply
from tests.security.conftest import Attack


def test_attack_bench_risky_write_asks_and_runs_once_approved(attack: Attack) -> None:
    # Given a model that wants to write a function file
    attack.model.script(
        Reply.tool("write", {"path": "functions/hello.py", "content": "x = 1\n"}),
        Reply.answer("written"),
    )
    # When Alice writes to the bot
    run_id = attack.say("please write it")
    # Then one approval request is posted and the file is not there yet
    (asked,) = attack.approvals_asked()
    assert "functions/hello.py" in asked
    assert attack.status(run_id) == "waiting"
    assert not (attack.workspace / "functions" / "hello.py").exists()
    # When she approves it, the write runs and the turn ends
    attack.press("approve")
    assert (attack.workspace / "functions" / "hello.py").read_text() == "x = 1\n"
    assert attack.status(run_id) == "completed"
    attack.assert_no_canary()


def test_attack_bench_canary_check_fails_when_the_canary_reaches_the_model(
    attack: Attack,
) -> None:
    # Given a conversation in which the canary was said to the model
    attack.model.script(Reply.answer("ok"))
    attack.say(f"my secret is {attack.canary}")
    # Then the canary check fails, naming the model
    with pytest.raises(AssertionError, match="reached the model"):
        attack.assert_no_canary()
