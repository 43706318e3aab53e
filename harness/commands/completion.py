"""`harness completion SHELL`: the shell completion script, and answering the shell's requests.

    eval "$(harness completion bash)"      # in ~/.bashrc
    harness completion zsh > ~/.zfunc/_harness
    harness completion fish > ~/.config/fish/completions/harness.fish

The scripts are typer's: the shell runs `harness` with `_HARNESS_COMPLETE=complete_<shell>`
and the words typed so far, and `serve_completion` makes sure typer's completion classes
answer (they are registered only on demand, so a plain command pays nothing for them).
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

SHELLS = ("bash", "zsh", "fish", "powershell")
PROG_NAME = "harness"
COMPLETE_VAR = "_HARNESS_COMPLETE"


def completion(
    shell: Annotated[str, typer.Argument(help=f"One of {', '.join(SHELLS)}.")],
) -> None:
    """Print the completion script for SHELL (bash: `eval "$(harness completion bash)"` in
    ~/.bashrc; see docs/cli.md for zsh, fish and PowerShell)."""
    if shell not in SHELLS:
        raise typer.BadParameter(f"one of {', '.join(SHELLS)}", param_hint="SHELL")
    # typer keeps the scripts in a private module; the variable and instruction format they
    # use are the ones `serve_completion` answers.
    from typer._completion_shared import get_completion_script

    typer.echo(get_completion_script(prog_name=PROG_NAME, complete_var=COMPLETE_VAR, shell=shell))


def serve_completion() -> None:
    """When the shell asks for completions (`_HARNESS_COMPLETE` set), register typer's
    completion classes so the request is answered in the scripts' format. Otherwise nothing."""
    if COMPLETE_VAR in os.environ:
        from typer._completion_classes import completion_init

        completion_init()
