"""Global options where users type them: `bme ingest --no-cache chat.jsonl` and `bme stats -v
chat.jsonl` mean `bme --no-cache ingest …` and `bme -v stats …`.

The options are defined once, on the app's callback (common.main_options); `GlobalFlagsGroup`
moves any of them found after the subcommand to the front before click parses the line. The
subcommand's own options come first: a token that is a value of one of them (`--query -v`),
an option of the same name the subcommand defines, and everything after `--` stay put.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.core import TyperGroup

_NEVER_MOVED = {"--help", "--version"}


# click's classes are duck-typed here: typer vendors its own click, which is not public API.
def _options(command: Any) -> dict[str, bool]:
    """Option name -> whether it takes a value, for one command's own options."""
    out: dict[str, bool] = {}
    for p in command.params:
        if getattr(p, "param_type_name", None) == "option":
            for name in (*p.opts, *p.secondary_opts):
                out[name] = not p.is_flag and not p.count
    return out


def _is_group(command: Any) -> bool:
    return hasattr(command, "get_command")


def _subcommand(group: Any, ctx: Any, args: list[str], start: int) -> tuple[Any, int]:
    """The (possibly nested) command named at args[start:], and where its own arguments begin."""
    command = group
    i = start
    while _is_group(command) and i < len(args):
        found = command.get_command(ctx, args[i])
        if found is None:
            return (None if command is group else command), i
        command, i = found, i + 1
    return (None if command is group else command), i


def hoist(group: Any, ctx: Any, args: list[str]) -> list[str]:
    """args with the group's own options that follow the subcommand moved before it."""
    globals_ = {k: v for k, v in _options(group).items() if k not in _NEVER_MOVED}
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":   # global options before it
        name = args[i].split("=", 1)[0]
        i += 2 if globals_.get(name) and "=" not in args[i] else 1
    command, j = _subcommand(group, ctx, args, i)
    if command is None:
        return args
    own = _options(command)
    head, rest = args[:j], []
    while j < len(args):
        token = args[j]
        if token == "--":
            rest += args[j:]
            break
        name = token.split("=", 1)[0]
        if name in own:
            takes = own[name] and "=" not in token
            rest += args[j:j + (2 if takes else 1)]
            j += 2 if takes else 1
        elif name in globals_:
            takes = globals_[name] and "=" not in token
            head = args[j:j + (2 if takes else 1)] + head
            j += 2 if takes else 1
        else:
            rest.append(token)
            j += 1
    return head + rest


# --help names what a value is, not the Python type it is parsed into (`<int range>`, `{chat}`).
_VALUE_NAMES = {int: "N", float: "X", str: "TEXT", Path: "PATH"}


def _value_type(param: Any) -> Any:
    """The value's Python type (typer keeps it on the parameter; None if it does not)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    args = getattr(annotation, "__args__", None)          # list[str], Optional[int]
    return next((a for a in args if a is not type(None)), None) if args else annotation


def name_values(command: Any) -> Any:
    """The command with plain value names in its --help: CHAT, PATHS..., N, PATH, TEXT."""
    for p in getattr(command, "params", ()):
        if getattr(p, "param_type_name", None) == "argument":
            p.metavar = p.metavar or p.name.upper() + ("..." if p.nargs == -1 else "")
            # Typer writes a required argument as `{CHAT} <path>`; the name alone says it.
            p.display_type_rich = lambda ctx, p=p: None
            p._usage_display_name = lambda p=p: p.metavar if p.required else f"[{p.metavar}]"
        elif p.metavar is None and not getattr(p, "is_flag", False) and _value_type(p) in _VALUE_NAMES:
            p.metavar = _VALUE_NAMES[_value_type(p)]
    for sub in getattr(command, "commands", {}).values():
        name_values(sub)
    return command


class GlobalFlagsGroup(TyperGroup):
    """The app's group: global options are accepted after the subcommand too, and every
    command's --help names its values plainly."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist(self, ctx, list(args)))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return name_values(super().get_command(ctx, cmd_name))
