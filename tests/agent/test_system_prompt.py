from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from harness.agent.memory.notes import append_note
from harness.agent.system_prompt import build_system_prompt
from harness.agent.workspace import ensure_workspace
from harness.llm.types import SystemBlock
from harness.tools import TOOL_GUIDELINES

MORNING = datetime(2026, 7, 6, 7, 5, 0, tzinfo=UTC)
EVENING = datetime(2026, 7, 6, 19, 59, 30, tzinfo=UTC)
TZ = "Europe/Paris"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "memory.md").write_text("---\nname: memory\ndescription: How memory works.\n---\n")
    ensure_workspace(root, tmp_path / "no-template", shipped)
    (root / "SOUL.md").write_text("# Soul\n\nYou are calm.\n")
    (root / "IDENTITY.md").write_text("# Identity\n\nYour name is Ada.\n")
    (root / "USER.md").write_text("The user is Grace.\n")
    (root / "MEMORY.md").write_text("Grace likes tea.\n")
    return root


def _build(workspace: Path, now: datetime, channel: str = "telegram") -> list[SystemBlock]:
    return build_system_prompt(
        workspace,
        agent_name="Harness",
        channel=channel,
        now=now,
        tool_guidelines=TOOL_GUIDELINES,
        tz_name=TZ,
    )


def test_build_system_prompt_uses_both_soul_and_identity(workspace: Path) -> None:
    identity = _build(workspace, MORNING)[0].text

    assert "You are calm." in identity
    assert "Your name is Ada." in identity
    assert identity.index("You are calm.") < identity.index("Your name is Ada.")


def test_build_system_prompt_falls_back_to_the_agent_name(workspace: Path) -> None:
    (workspace / "SOUL.md").unlink()
    (workspace / "IDENTITY.md").unlink()

    assert _build(workspace, MORNING)[0].text == "You are Harness."


def test_build_system_prompt_sections_come_in_order(workspace: Path) -> None:
    blocks = _build(workspace, MORNING)

    firsts = [block.text.splitlines()[0] for block in blocks]
    assert firsts == [
        "You are Harness.",
        "## About the User",
        "## Memory",
        "## Skills",
        TOOL_GUIDELINES.splitlines()[0],
        "## Delegation",
        "## Runtime",
    ]
    assert "Grace likes tea." in blocks[2].text
    assert "- memory: How memory works. (read skills/shipped/memory.md)" in blocks[3].text
    assert "`read`" in blocks[3].text, "the skills section must say to read a skill first"
    delegation = blocks[5].text
    for tool in ("delegate_task", "delegate_async_task", "delegate_scheduled_task"):
        assert f"`{tool}`" in delegation


def test_build_system_prompt_omits_empty_sections(workspace: Path) -> None:
    for name in ("USER.md", "MEMORY.md"):
        (workspace / name).unlink()
    (workspace / "skills" / "shipped" / "memory.md").unlink()

    blocks = build_system_prompt(
        workspace, agent_name="A", channel="cli", now=MORNING, tool_guidelines=" ", tz_name=TZ
    )

    assert [block.text.splitlines()[0] for block in blocks] == [
        "You are A.",
        "## Delegation",
        "## Runtime",
    ]


def test_build_system_prompt_volatile_block_is_last_with_runtime_facts(workspace: Path) -> None:
    blocks = _build(workspace, MORNING, channel="slack")

    assert [b.volatile for b in blocks] == [False] * (len(blocks) - 1) + [True]
    facts = blocks[-1].text
    assert "2026-07-06T09:05:00+02:00 (Europe/Paris)" in facts, facts
    assert str(workspace.resolve()) in facts
    assert "Channel: slack" in facts


def test_build_system_prompt_stable_blocks_identical_within_a_day(workspace: Path) -> None:
    append_note(workspace, "A note from today.", MORNING.astimezone(ZoneInfo(TZ)))

    morning = _build(workspace, MORNING)
    evening = _build(workspace, EVENING)

    assert any("A note from today." in b.text for b in morning), "today's log must be shown"
    assert [b.text.encode() for b in morning[:-1]] == [b.text.encode() for b in evening[:-1]]
    assert morning[-1].text != evening[-1].text


def test_build_system_prompt_memory_block_follows_the_local_date(workspace: Path) -> None:
    late_utc = datetime(2026, 7, 6, 22, 30, tzinfo=UTC)  # already 7 July in Paris
    append_note(workspace, "written on the 7th", datetime.fromisoformat("2026-07-07T00:10+02:00"))

    memory = next(b.text for b in _build(workspace, late_utc) if b.text.startswith("## Memory"))

    assert "written on the 7th" in memory


def test_build_system_prompt_rejects_a_naive_time_or_unknown_zone(workspace: Path) -> None:
    with pytest.raises(ValueError, match="aware"):
        _build(workspace, MORNING.replace(tzinfo=None))
    with pytest.raises(ValueError, match="unknown time zone"):
        build_system_prompt(
            workspace, agent_name="A", channel="c", now=MORNING, tool_guidelines="", tz_name="Nope"
        )


def test_build_system_prompt_sees_files_changed_between_calls(
    workspace: Path, settled_files: None
) -> None:
    # Given a prompt built (its files then kept as read)
    _build(workspace, MORNING)
    # When the agent rewrites USER.md and remembers a note, as tool calls of its turn would
    (workspace / "USER.md").write_text("The user is Grace Hopper.\n")
    append_note(workspace, "Grace's cat is called Bug.", MORNING.astimezone(ZoneInfo(TZ)))
    # Then the next call's prompt shows both
    text = "\n".join(b.text for b in _build(workspace, MORNING))
    assert "The user is Grace Hopper." in text
    assert "Grace's cat is called Bug." in text


def test_build_system_prompt_identity_replaced_by_a_link_out_is_left_out(
    workspace: Path, tmp_path: Path, settled_files: None, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a prompt built with IDENTITY.md, and a secret outside the workspace
    (tmp_path / "secret.env").write_text("API_KEY=SECRET\n")
    assert "Your name is Ada." in _build(workspace, MORNING)[0].text
    # When IDENTITY.md becomes a link to the secret
    (workspace / "IDENTITY.md").unlink()
    (workspace / "IDENTITY.md").symlink_to(tmp_path / "secret.env")
    # Then the next prompt shows neither the old text nor the secret, and says why
    identity = _build(workspace, MORNING)[0].text
    assert "SECRET" not in identity
    assert "Your name is Ada." not in identity
    assert "IDENTITY.md skipped" in caplog.text
