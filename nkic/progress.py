"""Terminal niceties of the command line: colour and a progress line, both only on a terminal.

Colour follows the usual conventions: on when the stream is a terminal, off when it is piped
or redirected, off whenever `NO_COLOR` is set to a non-empty value (https://no-color.org),
on when `FORCE_COLOR` is (and NO_COLOR is not).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO


def use_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """A one-line activity indicator on stderr for work that may take seconds: what is being
    done, the elapsed time and, when known, how many of how many items are done.

    Shown only when the stream is a terminal and only once the work has lasted `delay`
    seconds (quick commands print nothing); redrawn in place a few times a second and erased
    when the work ends, so it never mixes with the command's output.
    """

    def __init__(
        self, label: str, stream: TextIO | None = None, delay: float = 1.0, period: float = 0.2
    ):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.period = period
        self.done: int | None = None
        self.total: int | None = None
        self._start = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._drawn = False
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        #: under NO_COLOR, no escape sequence at all: a line is erased by overwriting it with
        #: spaces (some terminals and log capturers that want no colour show escapes raw)
        self.plain = bool(os.environ.get("NO_COLOR"))
        self._width = 0

    def update(self, label: str | None = None, done: int | None = None, total: int | None = None):
        with self._lock:
            if label is not None:
                self.label = label
            if done is not None:
                self.done = done
            if total is not None:
                self.total = total

    def line(self) -> str:
        with self._lock:
            count = f" [{self.done}/{self.total}]" if self.total is not None else ""
            text = f"{self.label}{count} {time.monotonic() - self._start:.1f} s"
            self._width = max(self._width, len(text))
            return text

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            self.stream.write(self._erase() + self.line())
            self.stream.flush()
            self._drawn = True
            if self._stop.wait(self.period):
                return

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self._drawn:
                self.stream.write(self._erase())
                self.stream.flush()

    def _erase(self) -> str:
        """Back to the start of the line, with the line drawn last erased."""
        if not self.plain:
            return "\r\x1b[K"
        return "\r" + " " * self._width + "\r"
