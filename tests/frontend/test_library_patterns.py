"""Python and NKI forms that current NKI accepts and large kernel libraries rely on: package
imports resolved as in an installed checkout, class attributes set by keyword, ordered
`nisa.nc_version` members, `nisa` enum arguments given as their integer values, `nl.range`."""

import textwrap

import numpy as np
import pytest

import nkic
from nkic.diagnostics import DiagnosticSink
from nkic.frontend import specialise
from nkic.ir.core import Inst

A = nkic.TensorSpec((128, 64), "float32")

COPY = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a, dge_mode=DGE)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def kernel(tmp_path, body: str):
    return write(tmp_path / "k.py", "import nki\nimport nki.isa as nisa\nimport nki.language "
                 "as nl\nfrom dataclasses import dataclass\n\n" + textwrap.dedent(body))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# imports of a project laid out for setuptools


def src_layout(tmp_path, pyproject: str, src: str = "src"):
    """A project whose package `mylib` lives under `src`, and a test file outside it that
    imports the package by its installed name."""
    write(tmp_path / "pyproject.toml", pyproject)
    write(tmp_path / src / "mylib" / "__init__.py", "")
    write(tmp_path / src / "mylib" / "tiles.py", "TILE = 64\n")
    return write(
        tmp_path / "test" / "integration" / "test_copy.py",
        """\
        import nki
        import nki.isa as nisa
        import nki.language as nl
        from mylib.tiles import TILE


        @nki.jit
        def k(a):
            assert TILE == 64
        """,
    )


def test_a_test_file_imports_the_package_of_a_src_layout(tmp_path):
    path = src_layout(tmp_path, '[project]\nname = "mylib"\n')
    assert nkic.check(path, a=A) == []


def test_setuptools_package_dir_names_the_import_root(tmp_path):
    path = src_layout(
        tmp_path,
        '[project]\nname = "mylib"\n\n[tool.setuptools]\npackage-dir = {"" = "python"}\n',
        src="python",
    )
    assert nkic.check(path, a=A) == []


def test_setuptools_packages_find_where_names_the_import_root(tmp_path):
    path = src_layout(
        tmp_path, '[project]\nname = "mylib"\n\n[tool.setuptools.packages.find]\nwhere = ["lib"]\n',
        src="lib",
    )  # fmt: skip
    assert nkic.check(path, a=A) == []


def test_without_a_project_the_package_is_not_found(tmp_path):
    path = src_layout(tmp_path, "")
    (tmp_path / "pyproject.toml").unlink()
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.loc.line) == ("err_import_error", 9)  # the use of the name it imports
    assert "no module named 'mylib'" in d.message


# ---------------------------------------------------------------------------------------------
# classes


def test_class_attributes_without_annotation_are_keyword_fields(tmp_path):
    path = kernel(
        tmp_path,
        """\
        @dataclass
        class Section(nl.NKIObject):
            index = None
            offset = 0
            size: int = 1

            def end(self):
                return self.offset + self.size


        @nki.jit
        def k(a):
            s = Section(4, index=2, offset=128)
            assert (s.index, s.offset, s.size, s.end()) == (2, 128, 4, 132)
            t = Section()
            assert t.index is None and t.end() == 1
        """,
    )
    assert nkic.check(path, a=A) == []


def test_a_keyword_naming_no_class_attribute_is_still_an_error(tmp_path):
    path = kernel(
        tmp_path,
        """\
        @dataclass
        class Section(nl.NKIObject):
            index = None

            def end(self):
                return 0


        @nki.jit
        def k(a):
            s = Section(idx=1)
            t = Section(end=2)
        """,
    )
    diags = nkic.check(path, a=A)
    assert [(d.code, d.loc.line) for d in diags] == [
        ("err_unexpected_keyword", 16),
        ("err_unexpected_keyword", 17),
    ]
    assert diags[0].hint == "did you mean 'index'?"


@pytest.mark.parametrize("nki", ["0.3", "0.7"])
def test_an_nkiobject_field_no_argument_gives_is_none_with_or_without_dataclass(tmp_path, nki):
    # the NKI language guide: "classes with and without the @dataclass decorator will be
    # compiled in the same way", by an __init__ whose fields default to None
    path = kernel(
        tmp_path,
        """\
        @dataclass
        class Dims(nl.NKIObject):
            T: int
            H: int
            spare: int
            K: int = 4


        class Plain(nl.NKIObject):
            T: int
            spare: int


        @nki.jit
        def k(a):
            d = Dims(T=8, H=a.shape[1])
            assert (d.T, d.H, d.spare, d.K) == (8, 64, None, 4)
            p = Plain(8)
            assert (p.T, p.spare) == (8, None)
        """,
    )
    assert nkic.check(path, a=A, nki=nki) == []


def test_a_python_dataclass_field_no_argument_gives_is_still_an_error(tmp_path):
    path = kernel(
        tmp_path,
        """\
        @dataclass
        class Dims:
            T: int
            spare: int


        @nki.jit
        def k(a):
            d = Dims(T=8)
        """,
    )
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.message) == (
        "err_missing_argument",
        "Dims() missing required argument 'spare'",
    )


# ---------------------------------------------------------------------------------------------
# nisa enums


@pytest.mark.parametrize(
    ("target", "expected"),
    [("trn1", (False, True)), ("trn2", (True, False)), ("trn3", (True, True))],
)
def test_nc_version_members_order_by_generation(tmp_path, target, expected):
    path = kernel(
        tmp_path,
        f"""\
        @nki.jit
        def k(a):
            v = nisa.get_nc_version()
            newer = v >= nisa.nc_version.gen3
            other = v < 3 or nisa.nc_version.gen4 <= v
            assert (newer, other) == {expected!r}
        """,
    )
    assert nkic.check(path, a=A, target=target) == []


def test_members_of_different_enums_do_not_order(tmp_path):
    path = kernel(
        tmp_path,
        """\
        @nki.jit
        def k(a):
            x = nisa.get_nc_version() > nisa.dge_mode.none
            y = nisa.get_nc_version() > 2.5
        """,
    )
    diags = nkic.check(path, a=A)
    assert [(d.code, d.loc.line) for d in diags] == [("err_type_error", 8), ("err_type_error", 9)]
    assert "cannot order a nisa.dge_mode and a nisa.nc_version member" in diags[0].message


def test_an_enum_argument_given_as_its_integer_value_is_that_member(tmp_path):
    path = write(tmp_path / "k.py", COPY.replace("DGE", "3"))
    assert nkic.check(path, a=A) == []
    sink = DiagnosticSink()
    k = specialise(str(path), None, {"a": A}, "trn2", sink)
    modes = [op.attrs["dge_mode"] for op in k.body if isinstance(op, Inst)]
    assert modes == ["none", "unknown"]


def test_an_integer_that_is_no_member_value_is_an_error(tmp_path):
    path = write(tmp_path / "k.py", COPY.replace("DGE", "7"))
    (d,) = nkic.check(path, a=A)
    assert d.code == "err_invalid_argument"
    assert (
        d.message
        == "'dge_mode' takes a nisa.dge_mode member; the integer 7 is not the value of one"
    )
    assert "nisa.dge_mode.none (3)" in d.hint


def test_a_tensor_named_none_is_unnamed(tmp_path):
    path = kernel(
        tmp_path,
        """\
        @nki.jit
        def k(a):
            t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf, name=None)
            u = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf, name=3)
        """,
    )
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.loc.line, d.message) == ("err_invalid_argument", 9, "name= must be a string")


# ---------------------------------------------------------------------------------------------
# dtype= on nisa calls with a dst

CAST = """\
@nki.jit
def k(a):
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t, dtype=DTYPE)
"""


def test_dtype_of_the_dst_tile_is_a_warning(tmp_path):
    path = kernel(tmp_path, CAST.replace("DTYPE", "nl.float32"))
    for args in ({"a": A}, {}):  # specialised, and the shape-independent checks
        diags = [d for d in nkic.check(path, **args) if d.severity != "note"]
        assert [(d.code, d.severity, d.loc.line, d.loc.col) for d in diags] == [
            ("nkic_removed_keyword", "warning", 11, 36)
        ]
        assert "the dst tile's dtype is used" in diags[0].message


def test_dtype_other_than_the_dst_tiles_is_an_error(tmp_path):
    path = kernel(tmp_path, CAST.replace("DTYPE", "nl.bfloat16"))
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.loc.line) == ("err_invalid_argument", 11)
    assert "writes a float32 dst tile" in d.message and "allocate dst as bfloat16" in d.hint


def test_a_float32_dma_transpose_is_accepted_unless_the_hardware_dge_does_it(tmp_path):
    body = """\
    @nki.jit
    def k(a):
        t = nl.ndarray((64, 128), a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=aDGE)
    """
    assert nkic.check(kernel(tmp_path, body.replace("DGE", "")), a=A) == []
    hw = body.replace("DGE", ", dge_mode=nisa.dge_mode.hwdge")
    diags = nkic.check(kernel(tmp_path, hw), a=A)
    assert diags[0].code == "err_dtype_mismatch" and "2-byte" in diags[0].message


# ---------------------------------------------------------------------------------------------
# shape-independent checks


def test_code_after_a_return_is_not_checked(tmp_path):
    path = kernel(
        tmp_path,
        """\
        @nki.jit
        def k(a):
            for i in range(2):
                if i:
                    continue
                    print(never_bound)
            out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
            return out
            if leftover_flag:
                x = 1


        @nki.jit
        def k2(a):
            if undefined_flag:
                return a
            return a
        """,
    )
    diags = [d for d in nkic.check(path) if d.severity == "error"]
    assert [(d.code, d.loc.line) for d in diags] == [("err_undefined_name", 20)]
    assert "'undefined_flag'" in diags[0].message


def test_beta1_typing_module_means_the_same_in_a_current_file(tmp_path):
    header = "import neuronxcc.nki.typing as nt\nfrom neuronxcc.nki.typing import tensor\n"
    body = """\
    @nki.jit
    def k(a: tensor[128, 64], out: nt.mutable_tensor):
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
        return out
    """
    path = kernel(tmp_path, body)
    path.write_text(header + path.read_text())
    out = nkic.TensorSpec((128, 64), "float32")
    assert nkic.check(path, out=out) == []
    path.write_text("import neuronxcc.nki.language as nl2\n" + path.read_text())
    (d,) = nkic.check(path, out=out)
    assert (
        d.code == "err_unsupported_api" and "'neuronxcc.nki.language' cannot be mixed" in d.message
    )


def test_internal_modules_of_the_nki_package_are_opaque(tmp_path):
    path = write(
        tmp_path / "k.py",
        """\
        import nki
        import nki.dtype as nt
        import nki.language as nl
        from nki.compiler.frontend import NKIFrontend


        @nki.jit
        def k(a):
            x = nt.float8_e4m3
        """,
    )
    (d,) = nkic.check(path, a=A)
    assert (d.code, d.loc.line) == ("err_import_error", 9)
    assert "'nki.dtype' is not available in kernels" in d.message
    path.write_text(path.read_text().replace("import nki.language", "import nki.langauge"))
    assert ("err_unknown_api", 3) in [(d.code, d.loc.line) for d in nkic.check(path, a=A)]


EMPTY_SHARD = """\
@nki.jit
def shard_exp(x, n):
    rows = x[nl.ds(0, n), :]  # a core with no rows of its own holds empty views
    t = nl.ndarray((128, 4), x.dtype, buffer=nl.sbuf)
    if n > 0 or USE:
        nisa.dma_copy(dst=t[0:n, :], src=rows)
        nisa.activation(dst=t[0:n, :], op=nl.exp, data=t[0:n, :])
        nisa.dma_copy(dst=x[0:n, :], src=t[0:n, :])
    return x
"""


def test_an_empty_view_is_a_value_and_an_error_only_as_an_operand(tmp_path):
    x = nkic.TensorSpec((8, 4), "float32")
    unused = kernel(tmp_path, EMPTY_SHARD.replace("USE", "False"))
    assert nkic.check(str(unused), kernel="shard_exp", x=x, n=0) == []
    used = kernel(tmp_path, EMPTY_SHARD.replace("USE", "True"))
    errors = nkic.check(str(used), kernel="shard_exp", x=x, n=0)
    assert [(d.code, d.loc.line) for d in errors] == [
        ("err_tensor_access_out_of_bound", 11),
        ("err_tensor_access_out_of_bound", 12),
        ("err_tensor_access_out_of_bound", 13),
    ]
    assert errors[0].message.startswith("this operand is an empty view of `t` (dimension 0")
    assert "if n > 0" in errors[0].hint
    negative = kernel(tmp_path, EMPTY_SHARD.replace("nl.ds(0, n)", "nl.ds(0, -1)"))
    (bad,) = nkic.check(str(negative), kernel="shard_exp", x=x, n=2)
    assert (bad.code, bad.message) == (
        "err_invalid_argument",
        "nl.ds size must not be negative, got -1",
    )


# ---------------------------------------------------------------------------------------------
# nl.range: not in the API reference, used by the NKI Library as Python's range


NL_RANGE = """\
@nki.jit
def blocks(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for b in nl.range(a.shape[1] // 16):
        t = nl.ndarray((128, 16), a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, b * 16:(b + 1) * 16])
        scale = 1.0 if b == 0 else float(b * b)  # b is a compile-time int, as in range()
        for _ in nl.range(1, 3, 2):
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=scale)
        nisa.dma_copy(dst=out[:, b * 16:(b + 1) * 16], src=t)
    return out
"""


@pytest.mark.parametrize("nki", ["0.3", "0.7"])
def test_nl_range_iterates_like_python_range(tmp_path, nki):
    a = np.random.default_rng(5).standard_normal((128, 64)).astype(np.float32)
    got = nkic.compile(str(kernel(tmp_path, NL_RANGE)), a, kernel="blocks", nki=nki)(a)
    scales = np.repeat([1.0, 1.0, 4.0, 9.0], 16).astype(np.float32)
    np.testing.assert_array_equal(got, a * scales)
