"""The bounds every remote read of one command keeps, whoever answers (Azure Resource Manager through the Azure SDK,
the Azure Retail Prices API, Prometheus): one deadline for all of the command's reads, a Retry-After that is capped,
a body of bounded size and JSON of bounded nesting. A read past any bound is one `ReadBoundError`, which each reader
turns into its own exit-4 error naming what it read.

The deadline is `--read-deadline SECONDS` on the commands that read, else `GPUSHARE_READ_DEADLINE`, else
`DEFAULT_DEADLINE_SECONDS`; the Pulumi program's reads (guard, preflight) take the variable. It bounds connecting,
waiting for the answer, a body that trickles in, and every wait between retries: a command ends within it.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpushare.errors import GpushareError
from gpushare.model.environment_variables import READ_DEADLINE_ENV

DEFAULT_DEADLINE_SECONDS = 120.0
"""Long enough for a region's VM-size list, a raw-series Prometheus query or a few throttled retries; short enough
that a server that never answers fails a CI job in two minutes, not the 7+ the libraries' own defaults allow."""
MAX_DEADLINE_SECONDS = 3600.0
MAX_RETRY_WAIT_SECONDS = 10.0
"""The longest wait between two tries, whatever `Retry-After` asks (an hour, an HTTP date, 1e400, NaN)."""
MAX_JSON_DEPTH = 64
"""Deeper than any answer read here (an ARM resource SKU is 5 levels, a Prometheus vector 4)."""
CHUNK_BYTES = 64 * 1024
_sleep = time.sleep
"""The wait between tries (tests record it instead)."""
DEADLINE_HINT = (f"raise it with --read-deadline SECONDS or {READ_DEADLINE_ENV}=SECONDS (default "
                 f"{DEFAULT_DEADLINE_SECONDS:.0f}), or check the network and the server")


class ReadBoundError(Exception):
    """A read went past a bound; the message says which and what to do. Not an `AzureError`: the SDK's retry policy
    must not retry it."""


class ReadDeadlineSettingError(GpushareError):
    """The deadline given is not a number of seconds: a setting to fix before anything is read."""

    exit_code = 2


def deadline_seconds(text: str, source: str) -> float:
    """Seconds from `text`, or `ReadDeadlineSettingError` naming `source` (the option or the variable)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= MAX_DEADLINE_SECONDS:  # NaN fails too
        raise ReadDeadlineSettingError(
            f"{source}={text!r}: the read deadline is a number of seconds above 0 and at most "
            f"{MAX_DEADLINE_SECONDS:.0f} (default {DEFAULT_DEADLINE_SECONDS:.0f})")
    return seconds


@dataclass
class ReadDeadline:
    """One command's deadline for every remote read it makes; started when created."""

    seconds: float = DEFAULT_DEADLINE_SECONDS
    source: str = f"the default read deadline ({READ_DEADLINE_ENV} unset)"
    """What set it, for the message: the option, the variable or the default."""
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], option: float | None = None) -> ReadDeadline:
        """`--read-deadline` when given (`option`, seconds), else `GPUSHARE_READ_DEADLINE`, else the default."""
        if option is not None:
            return cls(option, "--read-deadline")
        text = environ.get(READ_DEADLINE_ENV, "").strip()
        if text:
            return cls(deadline_seconds(text, READ_DEADLINE_ENV), READ_DEADLINE_ENV)
        return cls()

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def exceeded(self, what: str) -> ReadBoundError:
        return ReadBoundError(f"{what}: no complete answer within the read deadline of {self.seconds:g} s (set by "
                              f"{self.source}); {DEADLINE_HINT}")

    def check(self, what: str) -> float:
        """The seconds left, or `ReadBoundError` when none are."""
        remaining = self.remaining()
        if remaining <= 0:
            raise self.exceeded(what)
        return remaining

    def sleep(self, seconds: float, doing: str, sleep: Callable[[float], object] | None = None) -> None:
        """Wait `seconds` (with `sleep`, else `time.sleep`) before a retry, or `ReadBoundError` when the retry would
        start past the deadline."""
        if seconds >= self.remaining():
            raise ReadBoundError(f"{doing}: the server asked to retry later, after the read deadline of "
                                 f"{self.seconds:g} s (set by {self.source}); retry later, or {DEADLINE_HINT}")
        (sleep or _sleep)(seconds)


def retry_wait(retry_after: str | None, attempt: int) -> float:
    """The wait before try `attempt + 1`: `Retry-After` (seconds or an HTTP date, RFC 9110 section 10.2.3) when it
    is a time, else 2**attempt s; never below 0 or above `MAX_RETRY_WAIT_SECONDS`."""
    wait = float(2 ** attempt)
    if retry_after:
        try:
            wait = float(retry_after)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(retry_after)
                wait = when.timestamp() - time.time()
            except (TypeError, ValueError, OverflowError, IndexError):
                pass
    if math.isnan(wait):
        wait = float(2 ** attempt)
    return min(max(wait, 0.0), MAX_RETRY_WAIT_SECONDS)


def socket_of(stream: Any) -> Any:
    """The socket under an `http.client.HTTPResponse` (or urllib3's, which wraps one in `_fp`), to give each read
    the time left; None where the stream has none (a body already read)."""
    http_response = getattr(stream, "_fp", stream)
    raw = getattr(getattr(http_response, "fp", None), "raw", None)
    return getattr(raw, "_sock", None)


def read_body(stream: Any, *, limit: int, deadline: ReadDeadline, what: str,
              timeouts: tuple[type[BaseException], ...] = (), cut_short: tuple[type[BaseException], ...] = (),
              **read1_kwargs: object) -> bytes:
    """The whole body of `stream` (http.client's or urllib3's response, with `timeouts` and `cut_short` the errors
    its reads raise for a stalled and a truncated answer), read as it arrives: each read waits at most the time left,
    the body stops at `limit` bytes. A body cut short is a `ReadBoundError` too."""
    import http.client

    chunks: list[bytes] = []
    size = 0
    sock = socket_of(stream)
    while True:
        remaining = deadline.check(what)
        if sock is not None and sock.fileno() != -1:  # -1: closed once the whole body was read
            sock.settimeout(remaining)
        try:
            chunk = stream.read1(CHUNK_BYTES, **read1_kwargs)
        except (TimeoutError, *timeouts):
            raise deadline.exceeded(what) from None
        except (http.client.IncompleteRead, ConnectionError, *cut_short) as err:
            raise ReadBoundError(f"{what}: the answer was cut short after {size} bytes ({type(err).__name__}); "
                                 "retry, and check the network or the server if it persists") from None
        except OSError as err:
            if "timed out" in str(err):
                raise deadline.exceeded(what) from None
            raise ReadBoundError(f"{what}: the answer was cut short after {size} bytes ({err}); retry") from None
        if not chunk:
            if getattr(stream, "length", None):  # http.client: the end came before Content-Length's bytes did
                raise ReadBoundError(f"{what}: the answer was cut short after {size} bytes of {size + stream.length}; "
                                     "retry, and check the network or the server if it persists")
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise ReadBoundError(f"{what}: the answer is larger than {limit // (1024 * 1024)} MiB, more than any "
                                 "answer of this API; is the URL right? report it if it persists")
        chunks.append(chunk)


_JSON_STRUCTURE = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def check_nesting(body: bytes, what: str, limit: int = MAX_JSON_DEPTH) -> None:
    """`ReadBoundError` when `body` nests JSON arrays and objects deeper than `limit`: Python's decoder, the SDK's
    deserializer and the readers' walks recurse per level, and no answer read here nests that deep."""
    depth = 0
    for match in _JSON_STRUCTURE.finditer(body):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                raise ReadBoundError(f"{what}: the answer nests JSON deeper than {limit} levels, deeper than any "
                                     "answer of this API; is the URL right? report it if it persists")
        elif token in (b"]", b"}"):
            depth -= 1


def load_json(body: bytes | str, what: str) -> Any:
    """`body` decoded, nesting checked first; a body that is not JSON is a `ValueError` as from `json.loads`."""
    check_nesting(body.encode() if isinstance(body, str) else body, what)
    return json.loads(body)
