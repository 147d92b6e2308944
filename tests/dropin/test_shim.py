"""`nkic shim install|uninstall|status`, and unmodified scripts run through the hook."""

from __future__ import annotations

from click.testing import CliRunner

from nkic.cli import cli
from nkic.shim import PTH_NAME, ROOT

from .conftest import KERNELS


def shim(*args):
    return CliRunner().invoke(cli, ["shim", *args], catch_exceptions=False)


def with_site(site, code: str) -> str:
    """`code` run after the site directory's .pth files are processed (as at start-up)."""
    return f"import site, sys\nsite.addsitedir({str(site)!r})\n{code}"


def test_install_status_uninstall(tmp_path):
    site = tmp_path / "site"
    res = shim("install", "--site", str(site))
    assert res.exit_code == 0, res.output
    assert "nkic shim uninstall" in res.output
    pth = site / PTH_NAME
    assert str(ROOT) in pth.read_text().splitlines()
    status = shim("status", "--site", str(site)).output.splitlines()
    assert status == [
        f"hook: installed ({pth})",
        f"import nki: nkic's stand-in ({ROOT / 'nki'})",
    ]
    assert shim("uninstall", "--site", str(site)).output.strip() == f"removed {pth}"
    assert not pth.exists()
    assert "nothing to remove" in shim("uninstall", "--site", str(site)).output
    assert shim("status", "--site", str(site)).output.startswith("hook: not installed")


def test_the_hook_makes_nki_importable_without_nkic(tmp_path, python):
    site = tmp_path / "site"
    code = (
        "before = 'nkic' in sys.modules\n"
        "import nki, nki.language as nl\n"
        "print(before, nki.NKI_STANDIN, nki.__file__, nl.add)"
    )
    res = python(with_site(site, code))
    assert "No module named 'nki'" in res.stderr
    assert shim("install", "--site", str(site)).exit_code == 0
    res = python(with_site(site, code))
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [
        "False",
        "True",
        str(ROOT / "nki" / "__init__.py"),
        "nki.language.add",
    ]
    shim("uninstall", "--site", str(site))
    assert "No module named 'nki'" in python(with_site(site, code)).stderr


def _fake_real_nki(tmp_path):
    real = tmp_path / "sdk" / "nki"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    return real.parent


def test_never_shadows_a_real_nki(tmp_path, python):
    sdk = _fake_real_nki(tmp_path)
    site = tmp_path / "site"
    code = (
        "import subprocess, sys\n"
        "r = subprocess.run([sys.executable, '-m', 'nkic', 'shim', 'install', '--site', "
        f"{str(site)!r}], capture_output=True, text=True)\n"
        "print(r.returncode, r.stderr.strip())"
    )
    res = python(code, pythonpath=[str(sdk)])
    assert res.returncode == 0, res.stderr
    rc, message = res.stdout.strip().split(" ", 1)
    assert rc == "2" and "\n" not in message
    assert message.startswith("error: a real nki package is installed") and str(sdk) in message
    assert not (site / PTH_NAME).exists()
    # a hook installed earlier does not shadow an SDK installed later, nor does `import nkic`
    assert shim("install", "--site", str(site)).exit_code == 0
    res = python(
        with_site(site, "import nkic, nki\nprint(nki.REAL, nki.__file__)"), pythonpath=[str(sdk)]
    )
    assert res.stdout.split() == ["True", str(sdk / "nki" / "__init__.py")], res.stderr


def test_an_unmodified_script_runs_through_the_hook(tmp_path, python):
    site = tmp_path / "site"
    shim("install", "--site", str(site))
    script = KERNELS / "official_script.py"
    code = with_site(
        site,
        f"sys.argv = [{str(script)!r}]\nimport runpy\nrunpy.run_path(sys.argv[0], run_name='__main__')",
    )
    res = python(code, env={"NKI_SIMULATOR": "1"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "official script ok"
    res = python(code)  # without NKI_SIMULATOR the direct call asks for it
    assert "NKI_SIMULATOR=1" in res.stderr and res.returncode == 1


def test_status_reports_a_real_nki(tmp_path, python):
    sdk = _fake_real_nki(tmp_path)
    code = "from nkic.shim import status\nprint(status()[1])"
    res = python(code, pythonpath=[str(sdk)])
    assert (
        res.stdout.strip()
        == f"import nki: the real nki at {sdk / 'nki'} (the stand-in stays inactive)"
    )


def test_the_quick_start_with_top_level_host_code_runs(tmp_path, python):
    site = tmp_path / "site"
    shim("install", "--site", str(site))
    script = KERNELS / "quickstart_toplevel.py"
    res = python(
        with_site(site, f"import runpy\nrunpy.run_path({str(script)!r}, run_name='__main__')")
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "quickstart ok"
    assert "quickstart ok" not in res.stderr  # the script's print ran once, in Python


def run_script(python, name: str) -> list[str]:
    res = python(f"import runpy\nrunpy.run_path({str(KERNELS / name)!r}, run_name='__main__')")
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def test_a_kernel_needing_top_level_host_code_gets_that_error(python):
    # reported where the kernel uses the name, with a note at the host line that set it (10)
    assert "error err_unknown_api 15 True" in run_script(python, "host_needed.py")


def test_a_kernel_error_is_reported_beside_top_level_host_code(python):
    out = run_script(python, "host_and_kernel_error.py")
    assert "error err_tensor_access_out_of_bound 15" in out


def test_an_unwritable_site_is_a_one_line_usage_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    res = CliRunner().invoke(cli, ["shim", "install", "--site", str(blocker)])
    assert res.exit_code == 2
    (line,) = res.output.strip().splitlines()
    assert line.startswith(f"error: cannot write {blocker / PTH_NAME}")
