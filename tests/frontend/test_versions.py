"""Language versions (`--nki`, `nki=`): each version accepts its own API; a removed name is an
error naming the version that removed it and the replacement, a deprecated one a warning."""

import subprocess
import sys

import pytest

import nkic
from nkic.frontend import languages

HEADER = (
    "import nki\nimport nki.isa as nisa\nimport nki.language as nl\nimport nki.typing as nt\n\n"
)


def check(tmp_path, body: str, nki: str | None):
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + body)
    return nkic.check(path, nki=nki)


def summary(diags):
    return [(d.code, d.severity, d.loc.line, d.loc.col, d.loc.end_col) for d in diags]


DYNAMIC_RANGE = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    for i in nl.dynamic_range(4):
        pass
"""


def test_dynamic_range_works_before_0_6_and_is_deprecated_in_0_6(tmp_path):
    for nki in ("0.3", "0.5"):
        assert check(tmp_path, DYNAMIC_RANGE, nki) == []
    (d,) = check(tmp_path, DYNAMIC_RANGE, "0.6")
    assert summary([d]) == [("nkic_deprecated_api", "warning", 8, 14, 30)]
    assert d.message == "nl.dynamic_range is deprecated since NKI 0.6"
    assert d.hint == "use nl.fori_loop(lower, upper, body_fun)"


@pytest.mark.parametrize("nki", ["0.7", None])
def test_dynamic_range_removed_in_0_7_names_version_and_replacement(tmp_path, nki):
    (d,) = check(tmp_path, DYNAMIC_RANGE, nki)
    assert (d.code, d.loc.line, d.loc.col, d.loc.end_col) == ("err_unsupported_api", 8, 14, 30)
    assert d.message.startswith("nl.dynamic_range was removed in NKI 0.7; use nl.fori_loop")
    assert d.hint


COPY_DYNAMIC = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy_dynamic_src(t, a)
"""


def test_tensor_copy_dynamic_removed_in_0_4(tmp_path):
    (old,) = check(tmp_path, COPY_DYNAMIC, "0.3")
    assert old.code == "err_unsupported_api"
    assert "is not supported by nkic yet" in old.message
    for nki in ("0.4", "0.5", "0.6", "0.7"):
        (d,) = check(tmp_path, COPY_DYNAMIC, nki)
        assert (d.code, d.loc.line, d.loc.col) == ("err_unsupported_api", 9, 5)
        assert d.message == (
            "nisa.tensor_copy_dynamic_src was removed in NKI 0.4; "
            "use a view with .ap(scalar_offset=...)"
        )


PSUM_FMAX = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    n = nl.tile_size.psum_fmax
    assert n == 512
"""


def test_psum_fmax_deprecated_since_0_4_is_a_warning(tmp_path):
    assert check(tmp_path, PSUM_FMAX, "0.3") == []
    for nki in ("0.4", "0.7"):
        (d,) = check(tmp_path, PSUM_FMAX, nki)
        assert summary([d]) == [("nkic_deprecated_api", "warning", 8, 9, 31)]
        assert d.message == "nl.tile_size.psum_fmax is deprecated since NKI 0.4"
        assert d.hint == "use nl.tile_size.psum_bank_fmax"


def test_the_tiled_layout_exists_from_0_7(tmp_path):
    body = "@nki.jit\ndef kernel(a: nt.tensor[128, 512]):\n    s = nl.tiles\n"
    assert check(tmp_path, body, "0.7") == []
    (old,) = check(tmp_path, body, "0.6")
    assert old.code == "err_unknown_api" and "it is new in NKI 0.7" in old.message


def test_nki_scalar_exists_from_0_7(tmp_path):
    body = "@nki.jit\ndef kernel(a: nt.tensor[128, 512]):\n    s = nisa.NkiScalar\n"
    assert check(tmp_path, body, "0.7") == []
    (old,) = check(tmp_path, body, "0.6")
    assert old.code == "err_unknown_api"


def test_versions_and_default():
    assert languages.VERSIONS == ("0.3", "0.4", "0.5", "0.6", "0.7")
    assert languages.get(None) is languages.get("0.7")
    with pytest.raises(ValueError, match="unknown NKI version '0.8'"):
        languages.get("0.8")


def test_api_rejects_an_unknown_version(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + PSUM_FMAX)
    with pytest.raises(ValueError, match="unknown NKI version"):
        nkic.check(path, nki="0.2")


def test_cli_nki_option(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + PSUM_FMAX)
    nkic_cli = [sys.executable, "-m", "nkic"]
    old = subprocess.run([*nkic_cli, "check", "--nki", "0.3", str(path)], capture_output=True)
    assert old.returncode == 0 and b"nkic_deprecated_api" not in old.stdout
    new = subprocess.run([*nkic_cli, "check", str(path)], capture_output=True, text=True)
    assert new.returncode == 0 and "nkic_deprecated_api" in new.stdout
    bad = subprocess.run([*nkic_cli, "check", "--nki", "0.8", str(path)], capture_output=True)
    assert bad.returncode == 2 and b"0.8" in bad.stderr


def test_pyproject_selects_the_version_and_the_option_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.nkic]\nnki = "0.3"\n')
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + PSUM_FMAX)
    nkic_cli = [sys.executable, "-m", "nkic", "check", "--format", "json"]
    old = subprocess.run([*nkic_cli, str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert old.returncode == 0 and old.stdout.strip() == "[]"
    new = subprocess.run(
        [*nkic_cli, "--nki", "0.7", str(path)], capture_output=True, text=True, cwd=tmp_path
    )
    assert new.returncode == 0 and "nkic_deprecated_api" in new.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.nkic]\nnki = "0.9"\n')
    bad = subprocess.run([*nkic_cli, str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "nki = '0.9'" in bad.stderr


GATHER_V = """import nki.collectives as ncc


@nki.jit
def kernel(a: nt.tensor[128, 512]):
    ncc.all_gather_v_prepare(a)
"""


def test_a_collective_of_a_later_version_names_it(tmp_path):
    (old,) = check(tmp_path, GATHER_V, "0.6")
    assert old.code == "err_unknown_api"
    assert old.message.endswith("'all_gather_v_prepare' in NKI 0.6 (it is new in NKI 0.7)")
    # NKI 0.7 has it: the call is checked against its own signature
    (new,) = check(tmp_path, GATHER_V, "0.7")
    assert new.code == "err_missing_argument" and "all_gather_v_prepare()" in new.message


LOOPS = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    for i in nl.affine_range(2):
        for j in nl.sequential_range(2):
            pass
    for i in nl.affine_range(2):
        for k in nl.static_range(2):
            pass
"""


@pytest.mark.parametrize("nki", ["0.3", "0.4", "0.5", "0.6"])
def test_the_nl_loop_ranges_are_plain_before_0_7(tmp_path, nki):
    assert check(tmp_path, LOOPS, nki) == []


@pytest.mark.parametrize("nki", ["0.7", None])
def test_the_nl_loop_ranges_are_deprecated_in_0_7_once_per_kernel(tmp_path, nki):
    diags = check(tmp_path, LOOPS, nki)
    assert summary(diags) == [
        ("nkic_deprecated_api", "warning", 8, 14, 29),
        ("nkic_deprecated_api", "warning", 9, 18, 37),
        ("nkic_deprecated_api", "warning", 12, 18, 33),
    ]
    assert [d.message for d in diags] == [
        f"nl.{name} is deprecated since NKI 0.7"
        for name in ("affine_range", "sequential_range", "static_range")
    ]
    assert diags[0].hint == (
        "use range(start, stop, step): NKI 0.7 runs nl.affine_range as a plain range loop"
    )


def test_a_deprecated_name_is_reported_at_its_first_use_in_each_kernel(tmp_path):
    body = PSUM_FMAX.replace("    assert n == 512\n", "    m = nl.tile_size.psum_fmax\n")
    body += body.replace("def kernel(", "def other(")
    diags = check(tmp_path, body, "0.4")
    assert [(d.code, d.loc.line) for d in diags] == [
        ("nkic_deprecated_api", 8),
        ("nkic_deprecated_api", 12),
    ]
