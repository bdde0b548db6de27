"""`bme node edit` without --set: the node's fields in $EDITOR as TOML (or JSON), read back."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from ..errors import BadInputError, UsageError

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def to_toml(fields: dict[str, Any], title: str) -> str:
    """Fields as a TOML document (strings and lists of strings), with a header comment."""
    lines = [f"# {title}", "# Change values, delete a line to remove a field; save and quit to apply.", ""]
    for key, value in fields.items():
        name = key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)
        # a JSON string or array of strings is a valid TOML basic string or array
        lines.append(f"{name} = {json.dumps(value if isinstance(value, (str, list)) else str(value), ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def parse(text: str, *, as_json: bool, source: str) -> dict[str, Any]:
    """The edited fields, or a BadInputError naming the file and what is wrong."""
    try:
        data = json.loads(text) if as_json else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        raise BadInputError(f"{source}: not valid {'JSON' if as_json else 'TOML'} ({e}); nothing was changed",
                            "your text is kept there: fix it, then `bme node edit ... --set`, or edit again") from None
    if not isinstance(data, dict):
        raise BadInputError(f"{source}: expected an object of fields; nothing was changed")
    return data


def changes_between(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What an edit changed: new or different values, and None for each field removed."""
    out: dict[str, Any] = {k: v for k, v in new.items() if old.get(k) != v}
    out.update({k: None for k in old if k not in new})
    return out


def edit_fields(fields: dict[str, Any], *, as_json: bool, title: str) -> dict[str, Any]:
    """Open $VISUAL/$EDITOR on the fields; returns the changes (empty when none)."""
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not command:
        raise UsageError("no $EDITOR set", "set EDITOR (e.g. EDITOR=nano), or give the changes with --set FIELD=VALUE")
    text = (json.dumps(fields, ensure_ascii=False, indent=2) + "\n") if as_json else to_toml(fields, title)
    fd, name = tempfile.mkstemp(prefix="bme-node-", suffix=".json" if as_json else ".toml")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            done = subprocess.run([*shlex.split(command), str(path)], check=False)
        except OSError as e:
            raise UsageError(f"cannot run the editor {command!r} ({e.strerror})", "check $EDITOR") from None
        if done.returncode != 0:
            raise UsageError(f"the editor exited with status {done.returncode}; nothing was changed")
        edited = path.read_text(encoding="utf-8")
        if edited == text:
            return {}
        new = parse(edited, as_json=as_json, source=str(path))  # on error the file stays, for a retry
    except BadInputError:
        raise
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    path.unlink(missing_ok=True)
    return changes_between(fields, new)
