"""Diagnostics: the Diagnostic record, the error type that carries them, and their renderers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .ir.core import Loc


@dataclass(frozen=True)
class Related:
    """Another source location that explains a diagnostic (the other access of a race, …)."""

    loc: Loc
    message: str


@dataclass(frozen=True)
class Diagnostic:
    """One problem in the user's kernel: a stable code, a message, a source span and a hint.

    `loc.stack` holds the chain of helper-function calls from the kernel down to `loc`.
    """

    code: str
    message: str
    loc: Loc
    severity: str = "error"  # "error" | "warning" | "note"
    hint: str | None = None
    related: tuple[Related, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        d = {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "file": self.loc.file,
            "line": self.loc.line,
            "col": self.loc.col,
            "end_line": self.loc.end_line,
            "end_col": self.loc.end_col,
            "related": [
                {"file": r.loc.file, "line": r.loc.line, "col": r.loc.col, "message": r.message}
                for r in self._all_related()
            ],
        }
        if self.hint:
            d["hint"] = self.hint
        return d

    def _all_related(self) -> list[Related]:
        calls = [Related(s, "called from here") for s in reversed(self.loc.stack)]
        return list(self.related) + calls


class CompileError(Exception):
    """Raised by the Python API when a kernel has errors; carries every diagnostic."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__(render_text(self.diagnostics, color=False))


class DiagnosticSink:
    """Collects diagnostics during compilation; deduplicates identical reports."""

    def __init__(self):
        self.items: list[Diagnostic] = []
        self._seen: set[tuple] = set()

    def report(self, diag: Diagnostic) -> None:
        key = (diag.code, diag.loc.file, diag.loc.line, diag.loc.col, diag.message)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(diag)

    def error(self, code: str, message: str, loc: Loc, hint: str | None = None, **kw) -> None:
        self.report(Diagnostic(code, message, loc, "error", hint, **kw))

    def warning(self, code: str, message: str, loc: Loc, hint: str | None = None, **kw) -> None:
        self.report(Diagnostic(code, message, loc, "warning", hint, **kw))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)


# ---------------------------------------------------------------------------------------------
# renderers


def _source_line(file: str, line: int) -> str | None:
    try:
        lines = Path(file).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return lines[line - 1] if 0 < line <= len(lines) else None


def _snippet(loc: Loc, marker: str = "^") -> list[str]:
    src = _source_line(loc.file, loc.line)
    if src is None:
        return []
    width = len(str(loc.line))
    end = loc.end_col if loc.end_line == loc.line else len(src) + 1
    n = max(1, end - loc.col)
    gutter = " " * width
    return [
        f"{gutter} |",
        f"{loc.line} | {src}",
        f"{gutter} | {' ' * (loc.col - 1)}{marker * n}",
    ]


def render_one(d: Diagnostic) -> str:
    out = [f"{d.severity}[{d.code}]: {d.message}", f"  --> {d.loc.file}:{d.loc.line}:{d.loc.col}"]
    out += ["  " + s for s in _snippet(d.loc)]
    for r in d.related:
        out.append(f"note: {r.message}")
        out.append(f"  --> {r.loc.file}:{r.loc.line}:{r.loc.col}")
        out += ["  " + s for s in _snippet(r.loc, "-")]
    for frame in reversed(d.loc.stack):
        out.append(f"note: called from {frame.file}:{frame.line}:{frame.col}")
        src = _source_line(frame.file, frame.line)
        if src is not None:
            out.append(f"    {frame.line} | {src.strip()}")
    for n in d.notes:
        out.append(f"note: {n}")
    if d.hint:
        out.append(f"help: {d.hint}")
    return "\n".join(out)


def render_text(diags: list[Diagnostic], color: bool = False) -> str:
    return "\n\n".join(render_one(d) for d in diags)


def render_json(diags: list[Diagnostic]) -> str:
    return json.dumps([d.to_json() for d in diags], indent=2)
