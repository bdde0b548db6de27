"""Commands built on first use: `bme recall` builds the click command of `recall` only.

Typer turns every registered command into a click command before it parses the line: it
reads each function's signature and evaluates its annotations, for all 20 commands and
groups of bme, about 80 ms of CPU at every start on a busy 2-core machine
(docs/performance.md, start-up). `LazyTyper` keeps what `@app.command()` and `add_typer`
register aside, and its group's `commands` is a mapping that builds a command when it is
looked up. Its keys are known from the start, in the order of registration, so help,
completion and "did you mean" see every command as before; `bme --help` builds them all.
"""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any, Callable

import typer
from typer.core import TyperGroup
from typer.main import get_command, get_command_from_info, get_command_name
from typer.models import CommandInfo


class LazyCommands(MutableMapping):
    """name -> click command, each built from its registration when first looked up."""

    def __init__(self, app: LazyTyper, built: MutableMapping[str, Any]) -> None:
        self._app = app
        self._built = dict(built)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            self._built[name] = self._app.build(name)   # KeyError for a name never registered
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._app.pending.pop(name, None)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        names = self._app.names()
        yield from names
        yield from (n for n in list(self._built) if n not in names)

    def __len__(self) -> int:
        return len(self._built.keys() | set(self._app.names()))

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._app.pending


class LazyTyper(typer.Typer):
    """A Typer app whose commands and sub-apps become click commands only when looked up."""

    def __init__(self, *, cls: type[TyperGroup], **kwargs: Any) -> None:
        self.pending: dict[str, Any] = {}   # name -> CommandInfo or TyperInfo, in registration order
        app = self

        class Group(cls):  # type: ignore[misc, valid-type]
            def __init__(self, **attrs: Any) -> None:
                super().__init__(**attrs)
                self.commands = LazyCommands(app, self.commands)

        Group.__name__ = Group.__qualname__ = f"Lazy{cls.__name__}"
        super().__init__(cls=Group, **kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[Callable], Callable]:
        """Register a command, to be built when it is first looked up."""
        register = super().command(name, **kwargs)

        def decorator(f: Callable) -> Callable:
            register(f)
            info = self.registered_commands.pop()
            self.pending[info.name or get_command_name(info.callback.__name__)] = info
            return f
        return decorator

    def add_typer(self, typer_instance: typer.Typer, **kwargs: Any) -> None:
        """Register a sub-app (a command group), to be built when it is first looked up."""
        super().add_typer(typer_instance, **kwargs)
        info = self.registered_groups.pop()
        name = info.name if isinstance(info.name, str) else typer_instance.info.name
        if not isinstance(name, str):
            raise TypeError("a lazily built sub-app needs a name")
        self.pending[name] = info

    def names(self) -> list[str]:
        """The registered names as Typer orders a group's members: commands, then sub-apps."""
        return sorted(self.pending, key=lambda n: not isinstance(self.pending[n], CommandInfo))

    def build(self, name: str) -> Any:
        """The click command of one registered name, built as Typer builds a group's members."""
        info = self.pending[name]
        if isinstance(info, CommandInfo):
            return get_command_from_info(info, pretty_exceptions_short=self.pretty_exceptions_short,
                                         rich_markup_mode=self.rich_markup_mode)
        holder = typer.Typer(add_completion=False, rich_markup_mode=self.rich_markup_mode,
                             pretty_exceptions_short=self.pretty_exceptions_short)
        holder.callback()(_nothing)   # a sub-app is built inside a group, as Typer builds it
        holder.registered_groups.append(info)
        return get_command(holder).commands[name]  # type: ignore[attr-defined]


def _nothing() -> None:
    """The holder group's callback (never run)."""
