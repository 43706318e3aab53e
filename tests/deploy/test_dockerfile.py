"""The Dockerfile, read instruction by instruction: Debian slim bases, a non-root user, the
`harness` entry point, Debian's bubblewrap, no secret baked in; `.dockerignore` keeps secrets
out of the build context and the wheel's sources in."""

from __future__ import annotations

import fnmatch
import re

from tests.deploy import mentions

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)


def test_every_stage_is_debian_slim() -> None:
    bases = [i.arguments.split()[0] for i in mentions.dockerfile() if i.keyword == "FROM"]
    assert bases, "no FROM"
    for base in bases:
        assert re.fullmatch(r"python:3\.\d+-slim-(bookworm|trixie)", base), base


def test_the_final_user_is_not_root() -> None:
    users = [i.arguments for i in mentions.dockerfile() if i.keyword == "USER"]
    assert users, "the image runs as root: no USER"
    user = users[-1].split(":")[0]
    assert user.isdigit() and int(user) != 0, f"USER {users[-1]}: want a numeric non-root uid"


def test_the_entrypoint_runs_harness_under_an_init() -> None:
    entry = [i for i in mentions.dockerfile() if i.keyword == "ENTRYPOINT"][-1]
    argv = mentions.exec_form(entry.arguments)
    assert entry.arguments.startswith("["), "exec form, so SIGTERM reaches the process"
    assert argv[-1] == "harness", argv
    assert argv[:2] == ["/usr/bin/tini", "--"], argv


def test_debians_bubblewrap_is_installed() -> None:
    runs = " ".join(i.arguments for i in mentions.dockerfile() if i.keyword == "RUN")
    assert re.search(r"apt-get install[^&]*\bbubblewrap\b", runs), "bubblewrap not installed"


def test_no_secret_is_baked_in() -> None:
    for instruction in mentions.dockerfile():
        if instruction.keyword in ("ENV", "ARG"):
            assert not SECRET_NAME.search(instruction.arguments), (
                f"line {instruction.line}: {instruction.keyword} {instruction.arguments}"
            )
        if instruction.keyword in ("COPY", "ADD"):
            assert ".env" not in instruction.arguments.split(), f"line {instruction.line}"


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule, simplified: the last matching pattern wins, `!` re-includes."""
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        bare = pattern.lstrip("!").removeprefix("**/")
        if fnmatch.fnmatch(path, bare) or fnmatch.fnmatch(path.split("/")[0], bare):
            ignored = not negated
    return ignored


def test_dockerignore_keeps_secrets_out_and_the_sources_in() -> None:
    lines = mentions.DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for secret in (".env", "mcp.json", ".harness", ".env.production"):
        assert _ignored(secret, patterns), f"{secret} would be sent to the build"
    for needed in ("pyproject.toml", "README.md", "harness", "channels", "skills", "workspace"):
        assert not _ignored(needed, patterns), f"{needed} is needed to build the wheel"
