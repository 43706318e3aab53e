"""How `harness --help` looks: no type labels (`<bool>`, `<str>`), no `{text}` placeholders,
and an optional argument in brackets (`harness memory show [VERSION]`).

Typer prints a type column and wraps required arguments in braces, with no setting to turn
either off; `tidy_help` walks the built click command tree once and quiets them. The help
texts say what each value is, so the labels only added noise.
"""

from __future__ import annotations

from typer import _click as click  # typer vendors its own click
from typer.core import TyperArgument, TyperGroup, TyperOption


def tidy_help(command: click.core.Command) -> click.core.Command:
    """Remove type labels and argument braces from `command`'s help and its sub-commands',
    and bracket optional arguments. Returns `command`, changed in place. Idempotent."""
    for param in command.params:
        if isinstance(param, TyperArgument):
            label = (param.metavar or param.name or "value").strip("[]").upper()
            if not param.required:
                label = f"[{label}]"
            # Instance attributes: typer has no option for these, and subclassing its
            # parameters would mean rebuilding them.
            setattr(param, "metavar", label)  # noqa: B010
            setattr(param, "get_usage_pieces", lambda ctx, label=label: [label])  # noqa: B010
            setattr(param, "display_type_rich", lambda ctx: None)  # noqa: B010
        elif param.metavar is None:
            param.metavar = ""
    make_help_option = command.get_help_option

    def quiet_help_option(ctx: click.core.Context) -> TyperOption | None:
        option = make_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    setattr(command, "get_help_option", quiet_help_option)  # noqa: B010
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            tidy_help(sub)
    return command
