"""The Lua scripts as files: each named script has its file, says what it decides, compiles,
and survives a Redis that forgot it (NOSCRIPT)."""

from __future__ import annotations

from importlib import resources
from typing import get_args

import pytest
import redis

from harness.runtime import Runtime, event, function, publish, scripts
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker

NAMES: tuple[str, ...] = get_args(scripts.ScriptName)
LUA = resources.files("harness.runtime").joinpath("lua")


def _files() -> set[str]:
    return {
        entry.name.removesuffix(".lua") for entry in LUA.iterdir() if entry.name.endswith(".lua")
    }


def test_scripts_every_name_has_a_file_and_every_file_is_used() -> None:
    # Given the script names and the files in harness/runtime/lua
    included = {"prelude"}
    # Then each name has its file, and each file is a script or included by one
    assert set(NAMES) | included == _files()


@pytest.mark.parametrize("name", sorted(_files()))
def test_scripts_each_file_opens_with_what_it_decides(name: str) -> None:
    # Given a script file
    first = LUA.joinpath(f"{name}.lua").read_text("utf-8").splitlines()[0]
    # Then its first line is a comment that says something
    assert first.startswith("-- ") and len(first) > 20, f"{name}.lua opens with {first!r}"


@pytest.mark.parametrize("name", NAMES)
def test_scripts_compose_without_a_directive_left(name: str) -> None:
    # When a script is composed
    text = scripts.source(name)
    # Then no include is left, and the run scripts got the prelude's helpers
    assert not [line for line in text.splitlines() if line.startswith("-- #include ")]
    uses_prelude = "#include prelude.lua" in LUA.joinpath(f"{name}.lua").read_text("utf-8")
    assert ("local function rk(id)" in text) == uses_prelude


@pytest.mark.parametrize("name", NAMES)
def test_scripts_compile_on_a_real_redis(name: str, redis_client: redis.Redis) -> None:
    # When Redis loads the composed script, then it compiles (a syntax error raises here)
    assert len(redis_client.script_load(scripts.source(name))) == 40


def test_scripts_run_again_after_redis_forgot_them(redis_client: redis.Redis) -> None:
    # Given a runtime on a real Redis that has run the publish and claim scripts once
    registry = FunctionRegistry()

    @function(id="seam-noscript", trigger=event("app/noscript"), registry=registry)
    def handler(ctx: object) -> str:
        return "done"

    rt = Runtime(redis=redis_client, kicker=RecordingKicker(), registry=registry, keys=Keys("ns"))
    rt.register_functions()
    first = publish({"name": "app/noscript"}, runtime=rt).run_ids[0]
    assert advance(rt, first) == "completed"
    # When Redis forgets every script (a restart, or a promoted replica after a failover)
    redis_client.script_flush()
    # Then the same Script objects load them again on NOSCRIPT and the next run completes
    second = publish({"name": "app/noscript", "id": "again"}, runtime=rt).run_ids[0]
    assert advance(rt, second) == "completed"
