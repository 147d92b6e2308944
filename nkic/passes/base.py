"""The pass interface: a pass is a small frozen dataclass with a `name` and a `run` method."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, ParamSpec, TypeVar

from ..diagnostics import DiagnosticSink
from ..ir.core import Kernel

P = ParamSpec("P")
R = TypeVar("R")


def without_gc(fn: Callable[P, R]) -> Callable[P, R]:
    """Run `fn` with Python's cyclic garbage collector paused (re-enabled after, if it was on).

    The passes and the scheduler of an unrolled kernel allocate millions of small objects that
    die by reference counting, while the IR keeps a million long-lived ones: each collection
    the allocations trigger scans those again, which cost nearly half the scheduler's time.
    Cyclic garbage made meanwhile is collected once the collector runs again."""

    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused


def collect_cycles() -> None:
    """Free the cyclic garbage of one unit of a command that handles many: a file of
    `nkic check`, a kernel verified by `nkic migrate`, a point of a sweep worker.

    The command line keeps the cyclic collector off for a whole command (`nkic.cli.main`, and
    the sweep's forked workers inherit that); without this, checking a tree would hold every
    file's cyclic garbage until exit (the NKI Library's 173 files: 376 MB against 160 MB).
    What survives is frozen, so each collection walks only the objects made since the previous
    one, not the caches that outlive every unit. With the collector on, it does nothing."""
    if not gc.isenabled():
        gc.collect()
        gc.freeze()


@dataclass
class PassContext:
    """What every pass may read: the target and where to report diagnostics."""

    target: str
    sink: DiagnosticSink = field(default_factory=DiagnosticSink)
    #: The severity of a dependency between iterations of an `affine_range` loop: "error" where
    #: the iterations may run in any order (Beta 1), "warning" where the loop runs them in order
    #: (NKI 0.3 and later); given by the kernel's language version.
    affine_dependency: str = "error"
    #: Run the IR verifier after every pass, not only before the first and after the last
    #: (also set by the environment variable NKIC_VERIFY_EACH; see passes/pipeline.py).
    verify_each: bool = False
    #: The kernel's NKI language version ("0.3" … "0.7", "beta1"): checks a version introduced
    #: apply from that version on (`since`).
    nki: str = "0.7"
    #: While the pipeline runs the checks (which do not mutate the IR): each kernel's accesses
    #: (`checks.accesses.shared_accesses`), found once for all of them; None otherwise.
    check_memo: dict[int, tuple] | None = field(default=None, repr=False, compare=False)

    def since(self, version: str) -> bool:
        """Whether the kernel's language is `version` ("0.4") or later (Beta 1 is older)."""
        return _version_key(self.nki) >= _version_key(version)


def _version_key(version: str) -> tuple[int, ...]:
    if version == "beta1":
        return (0, 1)
    return tuple(int(x) for x in version.split("."))


@dataclass(frozen=True)
class Pass:
    """Transforms or checks a kernel in place; reports user errors to `ctx.sink`."""

    name: ClassVar[str] = "pass"
    #: A check whose findings about an instruction depend on that instruction alone, so it stays
    #: meaningful on the partial IR of a kernel whose other statements failed to specialise.
    local: ClassVar[bool] = False

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        raise NotImplementedError
