"""Commands whose module is imported only when that command runs or shows its own help, so that
`harness --help` and every other command do not pay for all of them (the model and MCP SDKs,
Celery, FastAPI: seconds, see docs/benchmarks.md "Start-up").

A `LazyCommand` names the command, where its function or `typer.Typer` lives, its help panel
and the one line `harness --help` shows for it; tests/cli/test_lazy_commands.py checks that line
and the panel against the loaded command, so the table cannot drift from the docstrings.
`LazyGroup.commands` loads an entry the first time it is looked up (to run it, to parse its
arguments, to show its `--help`), and the group's own help lists entries without loading them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer import _click as click  # typer vendors its own click
from typer.core import MarkupMode, TyperCommand

from harness.commands.help_style import tidy_help
from harness.commands.one_line_errors import HarnessGroup


@dataclass(frozen=True)
class LazyCommand:
    """One sub-command of `harness`, loaded on first use.

    `target` is `module:attribute`, a command function or a `typer.Typer` (a sub-group);
    `command_class` names a click command class in the same module (`SetupCommand`); `help`
    is the first paragraph of the command's docstring on one line, as `harness --help` shows it.
    """

    name: str
    target: str
    panel: str
    help: str
    command_class: str | None = None

    def load(self, markup_mode: MarkupMode) -> click.core.Command:
        """Import the target and build its click command exactly as `app.command(...)` or
        `app.add_typer(...)` would, with the help tidied like the rest (`tidy_help`)."""
        module_name, _, attribute = self.target.partition(":")
        module = importlib.import_module(module_name)
        target = getattr(module, attribute)
        holder = typer.Typer(rich_markup_mode=markup_mode, add_completion=False)
        if isinstance(target, typer.Typer):
            holder.add_typer(target, name=self.name, rich_help_panel=self.panel)
        else:
            cls = getattr(module, self.command_class) if self.command_class else None
            holder.command(self.name, cls=cls, rich_help_panel=self.panel)(target)
        return tidy_help(typer.main.get_group(holder).commands[self.name])

    def placeholder(self) -> click.core.Command:
        """A stand-in that only lists: its name, help line and panel, no parameters."""
        return TyperCommand(name=self.name, help=self.help, rich_help_panel=self.panel)


class LazyCommands(MutableMapping[str, click.core.Command]):
    """The commands of a group: the ones built eagerly, then the lazy ones in table order.
    Looking one up (`[name]`, `get`) loads it once; iterating lists names and loads nothing."""

    def __init__(
        self,
        eager: MutableMapping[str, click.core.Command],
        lazy: tuple[LazyCommand, ...],
        markup_mode: MarkupMode,
    ) -> None:
        self._commands: dict[str, click.core.Command | LazyCommand] = dict(eager)
        for entry in lazy:
            self._commands.setdefault(entry.name, entry)
        self._markup_mode = markup_mode

    def peek(self, name: str) -> click.core.Command | None:
        """The command if loaded, its placeholder if not, None if there is none. Loads
        nothing."""
        found = self._commands.get(name)
        return found.placeholder() if isinstance(found, LazyCommand) else found

    def is_loaded(self, name: str) -> bool:
        """Whether `name` has been loaded (or was built eagerly)."""
        return not isinstance(self._commands.get(name), LazyCommand)

    def __getitem__(self, name: str) -> click.core.Command:
        found = self._commands[name]
        if isinstance(found, LazyCommand):
            found = self._commands[name] = found.load(self._markup_mode)
        return found

    def __setitem__(self, name: str, command: click.core.Command) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._commands))

    def __len__(self) -> int:
        return len(self._commands)


class LazyGroup(HarnessGroup):
    """`HarnessGroup` with the sub-commands of `lazy` loaded on first use. Subclass it with
    `lazy` set (a class, because typer builds the group from `typer.Typer(cls=...)`)."""

    lazy: ClassVar[tuple[LazyCommand, ...]] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        mode = self.rich_markup_mode
        self.commands = LazyCommands(self.commands, self.lazy, mode)
        self._listing = False

    def list_commands(self, ctx: click.core.Context) -> list[str]:
        """The commands' names in order; loads none (typer's own reads every command)."""
        return list(self.commands)

    def get_command(self, ctx: click.core.Context, cmd_name: str) -> click.core.Command | None:
        """The command, loaded; while this group's help is being written, its placeholder."""
        commands = self.commands
        if self._listing and isinstance(commands, LazyCommands):
            return commands.peek(cmd_name)
        return commands.get(cmd_name)

    def format_help(
        self, ctx: click.core.Context, formatter: click.formatting.HelpFormatter
    ) -> None:
        """The group's help, listing the lazy commands without importing them."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
