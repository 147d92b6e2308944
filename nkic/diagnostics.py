"""Diagnostics: the Diagnostic record, the error type that carries them, their renderers
(text, JSON, SARIF, GitHub annotations), filtering, `noqa` comments and `nkic explain`.

The catalogue of codes lives in `nkic.codes`.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import json
import os
import re
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import quote

from .codes import CODES, STAGES
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
# source access


_SOURCES: dict[str, tuple[tuple[int, int], list[str]]] = {}


def _source_lines(file: str) -> list[str] | None:
    """The lines of `file`, cached while the file's mtime and size stay the same."""
    try:
        st = Path(file).stat()
        stamp = (st.st_mtime_ns, st.st_size)
        cached = _SOURCES.get(file)
        if cached is None or cached[0] != stamp:
            text = Path(file).read_text(encoding="utf-8", errors="replace")
            cached = _SOURCES[file] = (stamp, text.splitlines())
        return cached[1]
    except (OSError, ValueError):
        return None


def source_line(file: str, line: int) -> str | None:
    """Line `line` (1-based) of `file`, or None when the file or line does not exist."""
    lines = _source_lines(file)
    return lines[line - 1] if lines is not None and 0 < line <= len(lines) else None


# ---------------------------------------------------------------------------------------------
# text (rustc style)

_COLORS = {
    "error": "\x1b[1;31m",
    "warning": "\x1b[1;33m",
    "note": "\x1b[1;36m",
    "help": "\x1b[1;32m",
    "gutter": "\x1b[1;34m",
    "bold": "\x1b[1m",
}
_RESET = "\x1b[0m"


class _Style:
    def __init__(self, color: bool):
        self.color = color

    def __call__(self, kind: str, text: str) -> str:
        return f"{_COLORS[kind]}{text}{_RESET}" if self.color else text


def _snippet(
    loc: Loc, marker: str, style: _Style, kind: str, first_only: bool = False
) -> list[str]:
    """The spanned source lines with the whole span underlined.

    Spans of up to four lines are shown whole; longer ones show their first and last line.
    `first_only` shows just the first line (for related locations such as a loop header).
    """
    lines = _source_lines(loc.file)
    if lines is None or not 0 < loc.line <= len(lines):
        return []
    last = min(max(loc.end_line, loc.line), len(lines))
    if first_only:
        last = loc.line
    shown = list(range(loc.line, last + 1))
    if len(shown) > 4:
        shown = [loc.line, last]
    width = len(str(shown[-1]))
    pad = " " * width
    out = [style("gutter", f"{pad} |")]
    for n in shown:
        src = lines[n - 1]
        start = loc.col if n == loc.line else len(src) - len(src.lstrip()) + 1
        end = loc.end_col if n == loc.end_line else len(src) + 1
        if n == last and n - 1 not in shown and n != loc.line:
            out.append(style("gutter", f"{'.' * width} |"))
        out.append(style("gutter", f"{n:>{width}} | ") + src)
        out.append(
            style("gutter", f"{pad} | ")
            + " " * (start - 1)
            + style(kind, marker * max(1, end - start))
        )
    return out


def render_one(d: Diagnostic, color: bool = False) -> str:
    style = _Style(color)
    kind = d.severity if d.severity in _COLORS else "error"
    out = [style(kind, f"{d.severity}[{d.code}]") + style("bold", f": {d.message}")]
    out.append(style("gutter", "  --> ") + f"{d.loc.file}:{d.loc.line}:{d.loc.col}")
    out += ["  " + s for s in _snippet(d.loc, "^", style, kind)]
    for r in d.related:
        out.append(style("note", "note") + f": {r.message}")
        out.append(style("gutter", "  --> ") + f"{r.loc.file}:{r.loc.line}:{r.loc.col}")
        out += ["  " + s for s in _snippet(r.loc, "-", style, "note", first_only=True)]
    for frame in reversed(d.loc.stack):
        out.append(style("note", "note") + f": called from {frame.file}:{frame.line}:{frame.col}")
        src = source_line(frame.file, frame.line)
        if src is not None:
            out.append(style("gutter", f"    {frame.line} | ") + src.strip())
    for n in d.notes:
        out.append(style("note", "note") + f": {n}")
    if d.hint:
        out.append(style("help", "help") + f": {d.hint}")
    return "\n".join(out)


def render_text(diags: list[Diagnostic], color: bool = False) -> str:
    return "\n\n".join(render_one(d, color) for d in diags)


# ---------------------------------------------------------------------------------------------
# machine-readable formats


def render_json(diags: list[Diagnostic]) -> str:
    return json.dumps([d.to_json() for d in diags], indent=2)


_SARIF_LEVEL = {"error": "error", "warning": "warning", "note": "note"}


def _known(loc: Loc) -> bool:
    return not loc.file.startswith("<")


#: The base every relative artifact URI resolves against (`originalUriBaseIds`).
SARIF_BASE_ID = "SRCROOT"


def _artifact(file: str, root: Path) -> dict:
    """A file under `root` as a URI relative to SRCROOT (code-scanning services map it onto the
    repository); any other file as an absolute file URI."""
    p = Path(file)
    absolute = p if p.is_absolute() else (root / p)
    try:
        rel = Path(os.path.normpath(absolute)).relative_to(root)
    except ValueError:
        return {"uri": Path(os.path.normpath(absolute)).as_uri()}
    return {"uri": quote(rel.as_posix()), "uriBaseId": SARIF_BASE_ID}


def _sarif_location(loc: Loc, root: Path) -> dict:
    region = {
        "startLine": loc.line,
        "startColumn": loc.col,
        "endLine": max(loc.end_line, loc.line),
        "endColumn": loc.end_col if loc.end_line > loc.line else max(loc.end_col, loc.col + 1),
    }
    return {"physicalLocation": {"artifactLocation": _artifact(loc.file, root), "region": region}}


def _sarif_rule(code: str) -> dict:
    info = CODES.get(code)
    if info is None:
        return {"id": code, "shortDescription": {"text": code}}
    return {
        "id": code,
        "name": "".join(w.capitalize() for w in code.split("_")),
        "shortDescription": {"text": info.title},
        "fullDescription": {"text": info.explanation},
        "help": {
            "text": f"{info.explanation}\n\nBad:\n{info.bad}\n\nGood:\n{info.good}",
            "markdown": _explain_markdown(info),
        },
        "defaultConfiguration": {"level": _SARIF_LEVEL.get(info.severity, "error")},
        "properties": {"stage": info.stage},
    }


def _nkic_version() -> str:
    try:
        return importlib.metadata.version("nkic")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def render_sarif(diags: list[Diagnostic], root: str | os.PathLike | None = None) -> str:
    """A SARIF 2.1.0 log with one run. Its rules are the codes reported; file URIs are relative
    to `root` (default: the current directory), given in `originalUriBaseIds` as SRCROOT."""
    base = Path(os.path.abspath(root if root is not None else os.getcwd()))
    codes = list(dict.fromkeys(d.code for d in diags))
    index = {c: i for i, c in enumerate(codes)}
    results = []
    for d in diags:
        text = d.message + (f"\nhelp: {d.hint}" if d.hint else "")
        res: dict = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _SARIF_LEVEL.get(d.severity, "error"),
            "message": {"text": text},
            "locations": [_sarif_location(d.loc, base)] if _known(d.loc) else [],
        }
        related = [r for r in d._all_related() if _known(r.loc)]
        if related:
            res["relatedLocations"] = [
                {"id": i, **_sarif_location(r.loc, base), "message": {"text": r.message}}
                for i, r in enumerate(related)
            ]
        results.append(res)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "nkic",
                        "version": _nkic_version(),
                        "rules": [_sarif_rule(c) for c in codes],
                    }
                },
                "invocations": [{"executionSuccessful": True}],
                "originalUriBaseIds": {SARIF_BASE_ID: {"uri": base.as_uri().rstrip("/") + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2)


_GITHUB_LEVEL = {"error": "error", "warning": "warning", "note": "notice"}


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(diags: list[Diagnostic]) -> str:
    """GitHub Actions workflow commands (`::error file=…,line=…::message`), one per line."""
    out = []
    for d in diags:
        props = []
        if _known(d.loc):
            loc = d.loc
            props += [
                f"file={_gh_prop(loc.file)}",
                f"line={loc.line}",
                f"col={loc.col}",
                f"endLine={max(loc.end_line, loc.line)}",
                f"endColumn={loc.end_col}",
            ]
        props.append(f"title={_gh_prop(d.code)}")
        text = d.message + (f"\nhelp: {d.hint}" if d.hint else "")
        out.append(
            f"::{_GITHUB_LEVEL.get(d.severity, 'error')} {','.join(props)}::{_gh_data(text)}"
        )
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# filtering and suppression


def _matches(code: str, patterns: list[str]) -> bool:
    return any(p in ("ALL", "all") or code == p or code.startswith(p) for p in patterns)


def is_code_pattern(pattern: str) -> bool:
    """Whether a --select/--ignore pattern names a code or a code prefix (or ALL)."""
    from .codes import CODES

    return pattern in ("ALL", "all") or any(code.startswith(pattern) for code in CODES)


def filter_diagnostics(
    diags: list[Diagnostic], select: list[str] | None = None, ignore: list[str] | None = None
) -> list[Diagnostic]:
    """Keep diagnostics whose code matches `select` (all if None) and not `ignore`.

    A pattern matches a code equal to it or starting with it (`err_psum` selects every PSUM
    code); `ALL` matches everything.
    """
    out = []
    for d in diags:
        if select is not None and not _matches(d.code, select):
            continue
        if ignore and _matches(d.code, ignore):
            continue
        out.append(d)
    return out


#: Suppression comments: `nkic: noqa`, `nkic: noqa[code, ...]`, `nkic: noqa: code, ...`, and
#: the flake8/ruff forms `noqa` and `noqa: code, ...` (codes separated by commas or spaces),
#: each after a `#`.
_NOQA = re.compile(
    r"#\s*(?:nkic:\s*)?noqa"
    r"(?:\[(?P<bracket>[^\]]*)\]|:\s*(?P<colon>[\w.-]+(?:[\s,]+[\w.-]+)*))?",
    re.IGNORECASE,
)


def noqa_codes(line: str) -> set[str] | None:
    """None if the line has no noqa comment; an empty set for a blanket one (every code)."""
    blanket = False
    codes: set[str] = set()
    for m in _NOQA.finditer(line):
        listed = m.group("bracket") if m.group("bracket") is not None else m.group("colon")
        if listed is None:
            blanket = True
        else:
            codes |= {c for c in re.split(r"[\s,]+", listed) if c}
    if blanket:
        return set()
    return codes or None


def apply_noqa(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Drop diagnostics whose source line carries a noqa comment naming their code, or a
    blanket one (`noqa` or `nkic: noqa` alone). A comment that names only other tools' codes
    (`noqa: E501`) silences nothing of nkic's."""
    out = []
    for d in diags:
        codes = noqa_codes(source_line(d.loc.file, d.loc.line) or "")
        if codes is not None and (not codes or d.code in codes):
            continue
        out.append(d)
    return out


# ---------------------------------------------------------------------------------------------
# paths as the user gave them


def display_path(file: str, given: dict[str, str]) -> str:
    """`file` (absolute, as the compiler records it) as the user named it: the spelling given
    on the command line, else relative to the current directory when below it."""
    if file in given:
        return given[file]
    if file.startswith("<") or not os.path.isabs(file):
        return file
    try:
        return os.path.relpath(file)
    except ValueError:  # another drive
        return file


def _display_loc(loc: Loc, given: dict[str, str]) -> Loc:
    stack = tuple(_display_loc(s, given) for s in loc.stack)
    return replace(loc, file=_shown(loc.file, given), stack=stack)


def _shown(file: str, given: dict[str, str]) -> str:
    shown = display_path(file, given)
    return file if file not in given and shown.startswith("..") else shown


def with_display_paths(diags: list[Diagnostic], given: dict[str, str]) -> list[Diagnostic]:
    """`diags` with every file named as the user gave it (see `display_path`); files outside
    the current directory keep their absolute path."""
    return [
        replace(
            d,
            loc=_display_loc(d.loc, given),
            related=tuple(Related(_display_loc(r.loc, given), r.message) for r in d.related),
        )
        for d in diags
    ]


# ---------------------------------------------------------------------------------------------
# explain


def explain(code: str) -> str:
    """The text of `nkic explain CODE`. Raises ValueError (naming close matches) if unknown."""
    info = CODES.get(code)
    if info is None:
        close = difflib.get_close_matches(code, list(CODES), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown diagnostic code `{code}`{hint}")
    indent = lambda s: "\n".join("    " + x if x else "" for x in s.splitlines())  # noqa: E731
    return (
        f"{info.code}: {info.title}\n"
        f"({info.severity}; reported by: {STAGES[info.stage]})\n\n"
        f"{textwrap.fill(info.explanation, 88)}\n\n"
        f"Example that fails:\n\n{indent(info.bad)}\n\n"
        f"Fixed:\n\n{indent(info.good)}\n"
    )


def _explain_markdown(info) -> str:
    return (
        f"{info.explanation}\n\n**Fails:**\n\n```python\n{info.bad}\n```\n\n"
        f"**Fixed:**\n\n```python\n{info.good}\n```\n"
    )
