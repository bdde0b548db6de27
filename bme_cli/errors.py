"""bme's error tree: every error a user can see carries its exit code and a hint.

Only `cli.py` turns these into messages and exit codes; everything below raises them.
"""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented exit codes of every bme command."""

    OK = 0
    ERROR = 1
    USAGE = 2
    BAD_INPUT = 3
    PROVIDER = 4
    CONFIG = 5
    UNUSABLE_REPLY = 6
    INTERRUPTED = 130


class BmeError(Exception):
    """Base of every error bme reports to a user: a one-line message plus an optional hint."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class UsageError(BmeError):
    """The command line itself is wrong (bad option value, missing argument)."""

    exit_code = ExitCode.USAGE


class BadInputError(BmeError):
    """An input file (chat, graph, schema, queries) cannot be read; nothing was written."""

    exit_code = ExitCode.BAD_INPUT


class GraphFormatError(BadInputError):
    """A graph document is not a valid ST-BME / bme graph."""


class TooBigError(BadInputError):
    """An input file over the `max_input_mb` setting: refused before it is read."""

    def __init__(self, shown: str, size: int | None, limit: int):
        what = "is more" if size is None else f"is {size / (1 << 20):,.1f} MB, more"
        super().__init__(f"{shown} {what} than the {limit >> 20:,} MB bme reads",
                         "raise the max_input_mb setting (BME_MAX_INPUT_MB) to read it")


class ChatChangedError(BmeError):
    """Messages already turned into memories were edited, deleted or swiped since."""


class ConfigError(BmeError):
    """The configuration (file, environment, flags) is invalid or incomplete."""

    exit_code = ExitCode.CONFIG


class ProviderError(BmeError):
    """A model provider (chat or embeddings) failed: network, auth, or protocol."""

    exit_code = ExitCode.PROVIDER


class EndpointGaveUp(ProviderError):
    """An endpoint failed so often in a row that bme stopped asking it for this run (circuit breaker)."""


class InvalidReplyError(ProviderError):
    """The model answered, but never with a usable reply within the allowed retries.

    Not a network problem: the endpoint works, the model's replies did not (cut off, not
    JSON, wrong shape), so it has its own exit code.
    """

    exit_code = ExitCode.UNUSABLE_REPLY


class StoreError(BmeError):
    """The sidecar store cannot be read or written (locked, newer format, disk full)."""

    exit_code = ExitCode.ERROR
    errno: int | None = None   # the OSError's, when one caused it (graph/files.store_error)


class LockedError(StoreError):
    """Another bme process holds the graph's lock."""


class Interrupted(BmeError):
    """The user interrupted the run (Ctrl-C) after work was saved."""

    exit_code = ExitCode.INTERRUPTED
