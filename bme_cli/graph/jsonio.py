"""JSON text <-> Python data for graph documents: orjson when it can, the stdlib when it must.

orjson reads and writes the big documents several times faster than the `json` module.
The stdlib stays the reference: whatever orjson refuses (invalid JSON, NaN, a lone
surrogate escape such as ST-BME can write, a key that is not a string, an odd type) is
handed to `json`, which either reads or writes it, or explains the problem in its words.

One difference is hidden by `read_json`: orjson reads an integer literal beyond 64 bits
as a double, the stdlib keeps it exact. While a document orjson read is being built,
`finite_tree` fails on such a float, and `read_json` then re-reads the text with the
stdlib, as it does after any GraphFormatError: errors are always the stdlib's.
Writers must not hand orjson a non-finite float (it would write `null`): callers vouch
with `finite=True`.
"""
from __future__ import annotations

import gc
import json
import re
import sys
from contextvars import ContextVar
from functools import cache
from typing import Any, Callable, Iterable, TypeVar

import orjson

from ..errors import GraphFormatError

_LONE_SURROGATE = "[\ud800-\udfff]"
# what an error message escapes: lone surrogates, and the line breaks json.dumps leaves raw
_UNPRINTABLE = "[\ud800-\udfff\x85\u2028\u2029]"
_BOM = b"\xef\xbb\xbf"
_BIG = 2.0 ** 63  # orjson reads integer literals beyond 64 bits as floats at least this big
_ORJSON_DATA: ContextVar[bool] = ContextVar("bme_orjson_data", default=False)
T = TypeVar("T")
SCALARS = frozenset({str, int, bool, type(None)})  # types that are never NaN
_NOTHING = object()
# Odd types (dataclasses, dates, str/int/dict subclasses) go to the stdlib, which refuses
# or writes them exactly as before.
ORJSON_OPTS = (orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
                | orjson.OPT_PASSTHROUGH_SUBCLASS)


class _Refused(Exception):
    """A value the stdlib parser met that a graph document may not hold."""


MAX_NESTING = 512  # levels a graph value may nest: every walk and the stdlib writer stay far below
                   # Python's recursion limit (orjson itself reads 1024)


class NestingError(GraphFormatError):
    """A value nested deeper than MAX_NESTING."""


class JsonTextError(GraphFormatError):
    """The text is not JSON a graph document may hold (bad UTF-8, syntax, NaN, nesting)."""


class no_gc:  # noqa: N801 - used like a function: `with no_gc():`
    """Pause the cyclic GC while building or dumping many small containers (2-3x faster)."""

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._was:
            gc.enable()


# -- parsing ------------------------------------------------------------------------------
def _refuse_constant(name: str) -> float:
    raise _Refused(f"{name} is not allowed in a graph document")


def _stdlib_loads(text: str | bytes, source: str) -> Any:
    try:
        if not isinstance(text, str):
            text = bytes(text).decode("utf-8-sig")
        elif text.startswith("\ufeff"):
            text = text[1:]
        with no_gc():
            return json.loads(text, parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        raise JsonTextError(f"{source}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        msg = exc.msg.removesuffix(" at")  # "Invalid control character at" + " at line 1"
        raise JsonTextError(f"{source}: not valid JSON ({msg} at line {exc.lineno} "
                            f"column {exc.colno})") from None
    except ValueError:  # Python reads no integer literal over 4300 digits
        raise JsonTextError(f"{source}: holds an integer too long to read (over "
                            f"{sys.get_int_max_str_digits()} digits)") from None
    except _Refused as exc:
        raise JsonTextError(f"{source}: {exc}") from None
    except RecursionError:
        raise JsonTextError(f"{source}: JSON nested too deeply") from None


def _orjson_body(text: Any) -> Any:
    """What orjson.loads takes: str, or a memoryview of any buffer (an mmap, say), BOM skipped."""
    if isinstance(text, str):
        return text[1:] if text.startswith("\ufeff") else text
    view = memoryview(text)
    return view[3:] if view[:3] == _BOM else view


def parse_json(text: str | bytes | bytearray | memoryview, source: str) -> Any:
    """JSON text (or UTF-8 bytes) -> data; NaN and Infinity are refused.

    Errors are GraphFormatErrors of one line naming `source`. A literal that overflows
    (1e999) parses to inf, which the graph validators refuse wherever it sits: far cheaper
    than checking each float here. An integer beyond 64 bits may come back as a double:
    build anything that keeps the values with `read_json` instead.
    """
    try:
        with no_gc():
            return orjson.loads(_orjson_body(text))
    except orjson.JSONDecodeError:
        pass  # let the stdlib read it (lone surrogates) or say what is wrong, as it always has
    return _stdlib_loads(text, source)


def _orjson_build(text: Any, build: Callable[[Any], T]) -> Any:
    """build(what orjson read); _NOTHING if orjson refuses the text or build raises GraphFormatError."""
    try:
        with no_gc():
            data = orjson.loads(_orjson_body(text))
    except orjson.JSONDecodeError:
        return _NOTHING
    token = _ORJSON_DATA.set(True)
    try:
        return build(data)
    except GraphFormatError:
        return _NOTHING
    finally:
        _ORJSON_DATA.reset(token)


def try_read_json(text: str | bytes | bytearray | memoryview, build: Callable[[Any], T]) -> T | None:
    """build(data) as `read_json` would give it when orjson reads the text; None otherwise.

    For a shortcut that must not report errors: any problem (orjson refuses the text,
    `build` raises a GraphFormatError) is None, and the caller takes the ordinary path.
    """
    found = _orjson_build(text, build)
    return None if found is _NOTHING else found


def read_json(text: str | bytes | bytearray | memoryview, source: str, build: Callable[[Any], T]) -> T:
    """build(data) for the JSON text; exactly what the stdlib parser would give, faster.

    orjson parses first; if it cannot, or `build` raises a GraphFormatError (a real
    problem, or an integer orjson read inexactly), the stdlib parses again and `build`
    runs on its result, so every error is reported as it always was.
    """
    found = _orjson_build(text, build)
    if found is not _NOTHING:
        return found
    data = _stdlib_loads(text, source)
    token = _ORJSON_DATA.set(False)
    try:
        return build(data)
    except NestingError as exc:
        raise JsonTextError(f"{source}: JSON nested too deeply ({exc})") from None
    finally:
        _ORJSON_DATA.reset(token)



# -- writing -----------------------------------------------------------------------------
def dumps_checked(obj: Any, **kwargs: Any) -> str:
    """json.dumps that turns a NaN/Infinity somewhere in the graph into a GraphFormatError."""
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, **kwargs)
    except ValueError as exc:
        raise GraphFormatError(f"the graph holds a value JSON cannot store ({exc})",
                               hint="nothing was written; this is a bug in the step that set it") from None


def dumps_compact(obj: Any, *, finite: bool) -> bytes:
    """Compact UTF-8 JSON; `finite` vouches that no float in `obj` is NaN or infinite.

    Without that promise, or when orjson cannot write a value (a lone surrogate, a key
    that is not a string, an integer beyond 64 bits), the stdlib writes it, refusing
    NaN/Infinity with a GraphFormatError and escaping lone surrogates.
    """
    if finite:
        try:
            with no_gc():
                return orjson.dumps(obj, option=ORJSON_OPTS)
        except orjson.JSONEncodeError:
            pass
    with no_gc():
        return to_utf8(dumps_checked(obj, separators=(",", ":"), check_circular=False))


def dumps_pretty(obj: Any, *, exact: bool) -> str:
    """`json.dumps(obj, indent=2, ensure_ascii=False)` exactly, with lone surrogates escaped.

    `exact` vouches that every float is finite and is written the same by orjson and the
    stdlib (they differ only between 1e-10 and 1e-4); then orjson writes it, 20x faster.
    """
    if exact:
        try:
            with no_gc():
                return orjson.dumps(obj, option=ORJSON_OPTS | orjson.OPT_INDENT_2).decode("utf-8")
        except orjson.JSONEncodeError:
            pass
    text = dumps_checked(obj, indent=2)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a "\udXXX" escape: escape it as JS does
        text = _escape(_LONE_SURROGATE, text)
    return text


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """The surrogate classes above take a millisecond to compile: done when first needed."""
    return re.compile(pattern)


def _escape(pattern: str, text: str) -> str:
    return _compiled(pattern).sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def one_line(text: str) -> str:
    """Text for a one-line message: lone surrogates and NEL/LS/PS as \\u escapes."""
    return _escape(_UNPRINTABLE, text)


def to_utf8(json_text: str) -> bytes:
    """JSON text as UTF-8 bytes; lone surrogates (only possible inside strings) are escaped."""
    try:
        return json_text.encode("utf-8")
    except UnicodeEncodeError:
        return _escape(_LONE_SURROGATE, json_text).encode("utf-8")


# -- checks and messages -----------------------------------------------------------------
def finite_tree(values: Iterable[Any]) -> bool:
    """No NaN or infinity anywhere in these JSON values (nested lists and objects included).

    While `read_json` builds what orjson read, an integral float beyond 64 bits fails as
    well: it may have been an integer literal, which the stdlib re-read keeps exact.
    """
    return _finite_tree(values, _ORJSON_DATA.get())


def _finite_tree(values: Iterable[Any], orjson_data: bool) -> bool:
    # A loop over a stack, not recursion: a value nested 990 deep must not hit Python's limit.
    stack = [iter(values)]
    while stack:
        for x in stack[-1]:
            t = type(x)
            if t is float:
                if x - x != 0 or orjson_data and (x >= _BIG or x <= -_BIG) and x.is_integer():
                    return False
            elif t is dict or t is list:
                if len(stack) > MAX_NESTING:
                    raise NestingError(f"a value is nested more than {MAX_NESTING} levels deep")
                stack.append(iter(x.values() if t is dict else x))
                break
        else:
            stack.pop()
    return True


def quote(text: str, limit: int = 60) -> str:
    """An id or name in single quotes, escaped to stay on one line and cut to `limit`."""
    body = one_line(json.dumps(text, ensure_ascii=False)[1:-1])
    return "'" + (body if len(body) <= limit else body[: limit - 3] + "...") + "'"


def show(value: Any, limit: int = 40) -> str:
    """A short one-line rendering of a value for an error message."""
    if isinstance(value, (list, dict)) and len(value) > 8:  # never dump a huge structure
        return f"a list of {len(value)} items" if isinstance(value, list) else "an object"
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):
        text = repr(value)
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
