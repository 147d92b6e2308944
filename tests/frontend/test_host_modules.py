"""Standard modules host code reads at import (`os.environ`, `os.getenv`, `os.path`), modelled
without the machine's state: the environment starts empty whatever the shell holds; the rest
of `os` is an error only where evaluated code uses it."""

import textwrap

import numpy as np
import pytest

import nkic

A = nkic.TensorSpec((128, 64), "float32")

SETTINGS = """\
import os
import os.path
from os import environ

import nki
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt

LEVELS = {k: v for k, v in os.environ.items() if k.startswith("KERNEL_")}
SCALE = float(os.getenv("KERNEL_SCALE", "2.0"))
VERBOSE = "KERNEL_VERBOSE" in environ or bool(os.environ)
STEM = os.path.splitext(os.path.basename("kernels/attention.py"))[0]
PARTS = os.path.join("a", "b", "c.py").split(os.sep)


@nki.jit
def scale(a: nt.tensor[128, 64]):
    assert LEVELS == {} and not VERBOSE and len(os.environ) == 0
    assert STEM == "attention" and PARTS == ["a", "b", "c.py"]
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=SCALE)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def write(tmp_path, text: str, name: str = "k.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_environment_is_empty_whatever_the_shell_sets(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_SCALE", "5.0")
    monkeypatch.setenv("KERNEL_VERBOSE", "1")
    path = write(tmp_path, SETTINGS)
    assert nkic.check(path, a=A) == []
    a = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    out = nkic.compile(str(path), kernel="scale")(a)
    np.testing.assert_allclose(out, a * 2.0, rtol=1e-6)


def test_host_code_reads_back_what_it_sets_in_the_environment(tmp_path):
    path = write(
        tmp_path,
        """\
        import os
        from os import environ

        import nki

        os.environ["KERNEL_MODE"] = "fast"
        environ.setdefault("KERNEL_TILE", "128")


        @nki.jit
        def k(a):
            assert os.getenv("KERNEL_MODE") == "fast" and int(os.environ["KERNEL_TILE"]) == 128
            assert sorted(os.environ.keys()) == ["KERNEL_MODE", "KERNEL_TILE"]
        """,
    )
    assert nkic.check(path, a=A) == []


def test_a_variable_nobody_set_is_a_key_error_with_the_reason(tmp_path):
    path = write(
        tmp_path,
        """\
        import os

        import nki


        @nki.jit
        def k(a):
            mode = os.environ["KERNEL_MODE"]
        """,
    )
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.loc.line, d.loc.col) == ("err_value_error", 8, 12)
    assert d.message == "os.environ has no variable 'KERNEL_MODE'"
    assert "environment as empty" in d.hint


def test_environment_values_must_be_strings(tmp_path):
    path = write(
        tmp_path,
        """\
        import os

        import nki


        @nki.jit
        def k(a):
            os.environ["KERNEL_TILE"] = 128
        """,
    )
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.loc.line) == ("err_type_error", 8)


def test_machine_state_is_an_error_only_where_kernel_code_uses_it(tmp_path):
    path = write(
        tmp_path,
        """\
        import os

        import nki

        HAVE_CACHE = os.path.exists("/tmp/cache")
        WORKDIR = os.getcwd()


        @nki.jit
        def k(a):
            if HAVE_CACHE:
                pass
        """,
    )
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.loc.line) == ("err_import_error", 11)
    assert "'os.path.exists' is not available in kernels: it reads the file system" in d.message
    assert d.related[0].loc.line == 5


@pytest.mark.parametrize(
    ("call", "value"),
    [
        ('os.path.join("a", "b")', "a/b"),
        ('os.path.dirname("a/b/c.py")', "a/b"),
        ('os.path.normpath("a/./b/../c")', "a/c"),
        ('os.path.isabs("/a")', True),
        ('os.path.split("a/b.py")', ["a", "b.py"]),
    ],
)
def test_pure_path_functions_compute_as_posixpath(tmp_path, call, value):
    path = write(
        tmp_path,
        f"""\
        import os

        import nki


        @nki.jit
        def k(a):
            assert {call} == {value!r}
        """,
    )
    assert nkic.check(path, a=A) == []


def test_numpy_type_limits_are_numpys_values(tmp_path):
    import ml_dtypes

    f32, bf16, i32 = np.finfo(np.float32), ml_dtypes.finfo(ml_dtypes.bfloat16), np.iinfo(np.int32)
    path = write(
        tmp_path,
        f"""\
        import nki
        import nki.language as nl
        import numpy as np

        F32_MIN = np.finfo(np.float32).min.item()
        F32_EPS = float(np.finfo(np.float32).eps)


        @nki.jit
        def k(a):
            assert F32_MIN == {float(f32.min)!r} and F32_EPS == {float(f32.eps)!r}
            assert np.finfo(np.float32).tiny == {float(f32.tiny)!r}
            assert np.finfo(nl.bfloat16).max == {float(bf16.max)!r}
            assert np.finfo(nl.bfloat16).bits == 16
            assert np.iinfo(np.int32).max == {int(i32.max)} and np.iinfo(nl.uint8).min == 0
        """,
    )
    assert nkic.check(path, a=A) == []


def test_numpy_type_limits_of_a_non_float_dtype_are_an_error(tmp_path):
    path = write(
        tmp_path,
        """\
        import nki
        import numpy as np


        @nki.jit
        def k(a):
            x = np.finfo(np.int32)
        """,
    )
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.loc.line) == ("err_type_error", 7)
    assert "np.finfo() takes one of float16, float32" in d.message
