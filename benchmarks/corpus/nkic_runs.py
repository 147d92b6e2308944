"""Run one `nkic` command in a subprocess and sort its outcome.

Each command runs in its own process with a limit, so an internal error or a hang in nkic
is counted against that kernel and never stops the harness. The limit is CPU time
(RLIMIT_CPU in the child), so a result does not depend on how loaded the machine is; a wall
clock backstop of WALL_FACTOR times the limit catches a command that waits without computing.
Statuses: `ok` (exit 0), `diagnostics` (exit 1: the kernel has errors), `internal-error` (a
traceback or nkic's "internal error" line), `timeout` (its detail says "timeout (CPU)" or
"timeout (wall)"), `usage-error` (nkic refused the command line: a mistake in the harness's
tables).
"""

from __future__ import annotations

import functools
import json
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

OK, DIAGNOSTICS, INTERNAL, TIMEOUT, USAGE = (
    "ok",
    "diagnostics",
    "internal-error",
    "timeout",
    "usage-error",
)

_TEXT_DIAG = re.compile(r"^(error|warning)\[([A-Za-z0-9_]+)\]: (.*)$")
_TEXT_LOC = re.compile(r"^\s*--> (.*):(\d+):(\d+)\s*$")


@dataclass
class Diag:
    """The fields of a diagnostic the report needs."""

    code: str
    message: str
    file: str = ""
    line: int = 0

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, "file": self.file, "line": self.line}

    @classmethod
    def from_json(cls, d: dict) -> Diag:
        return cls(d["code"], d["message"], d.get("file", ""), int(d.get("line", 0)))


@dataclass
class Outcome:
    status: str
    seconds: float
    errors: list[Diag] = field(default_factory=list)
    #: the internal error's or usage error's one line, a run's fault, or the stdout wanted
    detail: str = ""
    stdout: str = ""


#: the wall clock backstop, as a multiple of the CPU time limit
WALL_FACTOR = 4.0


def cpu_limited(cpu_seconds: float):
    """A `preexec_fn` that limits the child to `cpu_seconds` of CPU time (it then gets
    SIGXCPU) and turns core dumps off (SIGXCPU would otherwise write one)."""
    soft = max(1, int(-(-cpu_seconds // 1)))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return limit


def run_limited(
    command: list[str], cpu_seconds: float, **kwargs
) -> subprocess.CompletedProcess | Outcome:
    """Run COMMAND with at most `cpu_seconds` of CPU time and WALL_FACTOR times that of wall
    time; a TIMEOUT Outcome when either limit is hit, else the finished process."""
    start = time.monotonic()
    wall = cpu_seconds * WALL_FACTOR
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=wall,
            preexec_fn=cpu_limited(cpu_seconds),
            **kwargs,
        )
    except subprocess.TimeoutExpired:
        return Outcome(
            TIMEOUT,
            time.monotonic() - start,
            detail=f"timeout (wall): no result in {wall:g} s of wall time",
        )
    if proc.returncode == -signal.SIGXCPU:  # sent only at the soft RLIMIT_CPU
        return Outcome(
            TIMEOUT,
            time.monotonic() - start,
            detail=f"timeout (CPU): more than {cpu_seconds:g} s of CPU time",
        )
    return proc


def nkic_command() -> list[str]:
    return [sys.executable, "-m", "nkic"]


def run_nkic(
    args: list[str], timeout: float, cwd: str | None = None, pythonpath: tuple[str, ...] = ()
) -> Outcome:
    """Run `nkic ARGS` with `timeout` seconds of CPU time; parse the errors from JSON (check) or the text rendering (compile).
    `pythonpath`: directories put first on PYTHONPATH, where nkic also looks for the modules
    a kernel imports (a project's source root, as its own test environment has it)."""
    start = time.monotonic()
    proc = run_limited(nkic_command() + args, timeout, cwd=cwd, env=_env(pythonpath))
    if isinstance(proc, Outcome):
        return proc
    seconds = time.monotonic() - start
    out, err = proc.stdout, proc.stderr
    internal = _internal_error(err)
    if internal:
        return Outcome(INTERNAL, seconds, detail=internal)
    if proc.returncode == 0:
        return Outcome(OK, seconds, stdout=out)
    if proc.returncode == 1:
        errors = _json_errors(out) if "--format" in args else None
        if errors is None:
            errors = text_errors(err)
        # a run's fault (`runtime fault: ...`) is one line, not a rendered diagnostic
        detail = "" if errors else _fault_or_last_line(err)
        return Outcome(DIAGNOSTICS, seconds, errors=errors, detail=detail, stdout=out)
    last = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    if proc.returncode < 0:
        return Outcome(INTERNAL, seconds, detail=f"killed by signal {-proc.returncode}")
    return Outcome(USAGE, seconds, detail=last)


@functools.cache
def supports_option(command: str, option: str) -> bool:
    """Whether `nkic COMMAND` has OPTION (its --help mentions it)."""
    try:
        proc = subprocess.run(
            nkic_command() + [command, "--help"], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        return False
    return option in proc.stdout


def _env(pythonpath: tuple[str, ...] = ()) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.pop("NKIC_DEBUG", None)  # keep nkic's own one-line internal-error report
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([*pythonpath, env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    return env


def last_line(text: str) -> str:
    """The last non-blank line of `text`, stripped ("" if none)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _fault_or_last_line(text: str) -> str:
    """A run's last `runtime fault:` line, else the last non-blank line."""
    faults = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("runtime fault:")]
    return faults[-1] if faults else last_line(text)


def _internal_error(stderr: str) -> str:
    for line in stderr.splitlines():
        if line.startswith("internal error:"):
            return line.strip()
    if "Traceback (most recent call last)" in stderr:
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        return "traceback: " + (lines[-1].strip() if lines else "")
    return ""


def _json_errors(stdout: str) -> list[Diag] | None:
    try:
        items = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    return [
        Diag(d["code"], d["message"], d.get("file", ""), int(d.get("line", 0)))
        for d in items
        if d.get("severity") == "error"
    ]


def text_errors(text: str) -> list[Diag]:
    """The errors of nkic's text rendering (`error[code]: message` then `--> file:line:col`)."""
    out: list[Diag] = []
    pending: Diag | None = None
    for line in text.splitlines():
        m = _TEXT_DIAG.match(line)
        if m:
            pending = Diag(m.group(2), m.group(3)) if m.group(1) == "error" else None
            if pending:
                out.append(pending)
            continue
        loc = _TEXT_LOC.match(line)
        if loc and pending and not pending.file:
            pending.file, pending.line = loc.group(1), int(loc.group(2))
    return out
