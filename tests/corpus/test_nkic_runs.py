"""How an nkic subprocess's outcome is sorted: the harness must never mistake a crash or a
hang for a diagnostic."""

from __future__ import annotations

import sys

import pytest

from benchmarks.corpus import nkic_runs
from benchmarks.corpus.nkic_runs import run_nkic, text_errors


@pytest.fixture
def fake_nkic(monkeypatch, tmp_path):
    """Replace nkic by a script whose behaviour the test chooses."""

    def use(body: str):
        script = tmp_path / "fake_nkic.py"
        script.write_text("import sys, time, json\n" + body)
        monkeypatch.setattr(nkic_runs, "nkic_command", lambda: [sys.executable, str(script)])

    return use


def test_internal_error_line_and_traceback(fake_nkic):
    fake_nkic("print('internal error: KeyError: x (this is a bug)', file=sys.stderr); sys.exit(2)")
    o = run_nkic(["check", "k.py"], timeout=30)
    assert (o.status, o.detail) == ("internal-error", "internal error: KeyError: x (this is a bug)")
    fake_nkic("raise RuntimeError('boom')")
    o = run_nkic(["check", "k.py"], timeout=30)
    assert o.status == "internal-error" and "RuntimeError: boom" in o.detail


def test_timeout_wall(fake_nkic):
    """A command that waits without computing hits the wall clock backstop (4 x the limit)."""
    fake_nkic("time.sleep(30)")
    o = run_nkic(["check", "k.py"], timeout=0.5)
    assert o.status == "timeout" and o.seconds < 10
    assert o.detail.startswith("timeout (wall)")


def test_timeout_cpu(fake_nkic, monkeypatch):
    """A command that computes past its CPU time is stopped by RLIMIT_CPU, reported as such
    and not as a crash (it dies of SIGXCPU)."""
    monkeypatch.setattr(nkic_runs, "WALL_FACTOR", 60.0)  # a loaded machine is slow to give 1 s
    fake_nkic("while True:\n    pass\n")
    o = run_nkic(["check", "k.py"], timeout=1)
    assert o.status == "timeout" and o.detail.startswith("timeout (CPU)")


def test_cpu_limit_is_not_inherited_by_the_harness(fake_nkic):
    import resource

    before = resource.getrlimit(resource.RLIMIT_CPU)
    fake_nkic("import resource; print(resource.getrlimit(resource.RLIMIT_CPU)[0])")
    o = run_nkic(["check", "k.py"], timeout=7)
    assert o.status == "ok" and int(o.stdout) == 7
    assert resource.getrlimit(resource.RLIMIT_CPU) == before


def test_usage_error_and_clean(fake_nkic):
    fake_nkic("print('error: --arg expects NAME=SPEC', file=sys.stderr); sys.exit(2)")
    o = run_nkic(["compile", "k.py"], timeout=30)
    assert (o.status, o.detail) == ("usage-error", "error: --arg expects NAME=SPEC")
    fake_nkic("sys.exit(0)")
    assert run_nkic(["check", "k.py"], timeout=30).status == "ok"


def test_check_errors_come_from_json_warnings_dropped(fake_nkic):
    fake_nkic(
        "print(json.dumps([{'code': 'w', 'severity': 'warning', 'message': 'm', 'file': 'f',"
        " 'line': 1}, {'code': 'err_x', 'severity': 'error', 'message': 'bad', 'file': 'f',"
        " 'line': 7}])); sys.exit(1)"
    )
    o = run_nkic(["check", "k.py", "--format", "json"], timeout=30)
    assert o.status == "diagnostics"
    assert [(e.code, e.message, e.line) for e in o.errors] == [("err_x", "bad", 7)]


def test_compile_errors_come_from_the_text_rendering():
    text = (
        "warning[w_x]: careful\n  --> /a/k.py:3:1\n\n"
        "error[err_import_error]: 'os' is not available\n  --> /a/k.py:12:5\n   |\n"
        "note: called from /a/b.py:1:1\n\n"
        "error[err_type_error]: dict keys must be strings\n  --> /a/h.py:46:5\n"
        "error: compilation failed with 2 error(s)\n"
    )
    assert [(e.code, e.message, e.file, e.line) for e in text_errors(text)] == [
        ("err_import_error", "'os' is not available", "/a/k.py", 12),
        ("err_type_error", "dict keys must be strings", "/a/h.py", 46),
    ]


def test_a_runs_fault_is_the_outcomes_detail(fake_nkic):
    fake_nkic(
        "print('warning[w_x]: careful', file=sys.stderr); "
        "print('latency so far', file=sys.stderr); print('runtime fault: missing semaphore "
        "(compiler bug): dma_copy at k.py:9', file=sys.stderr); print('  at k.py:9', "
        "file=sys.stderr); sys.exit(1)"
    )
    o = run_nkic(["run", "k.neff"], timeout=30)
    assert (o.status, o.errors) == ("diagnostics", [])
    assert o.detail == "runtime fault: missing semaphore (compiler bug): dma_copy at k.py:9"
