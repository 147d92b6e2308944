"""`make demo`: compile a kernel with the nkic CLI, run it on the simulator, check it with numpy.

Steps, each printed as it runs:
  1. nkic compile examples/tensor_add.py  -> out/tensor_add.neff
  2. nkic run out/tensor_add.neff with two random bfloat16 inputs -> out/c.npy + timing summary
  3. compare against numpy (bfloat16 add rounds to nearest even, so the match is exact)
  4. the same through the Python API for the tiled matmul, against numpy
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

import nkic

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "out"
NKIC = [sys.executable, "-m", "nkic"]


def sh(*args: str) -> None:
    print("$ nkic " + " ".join(shlex.quote(a) for a in args[3:]), flush=True)
    subprocess.run(args, check=True)


def main() -> int:
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 512)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 512)).astype(ml_dtypes.bfloat16)
    # .npy has no bfloat16: inputs travel as float32 holding exactly the bfloat16 values.
    np.save(OUT / "a.npy", a.astype(np.float32))
    np.save(OUT / "b.npy", b.astype(np.float32))

    neff = OUT / "tensor_add.neff"
    sh(
        *NKIC,
        "compile",
        str(HERE / "tensor_add.py"),
        "--arg",
        "a=bfloat16[128,512]",
        "--arg",
        "b=bfloat16[128,512]",
        "--target",
        "trn2",
        "-o",
        str(neff),
    )
    sh(
        *NKIC,
        "run",
        str(neff),
        "--in",
        f"a={OUT / 'a.npy'}",
        "--in",
        f"b={OUT / 'b.npy'}",
        "--out-dir",
        str(OUT),
        "--profile",
        str(OUT / "tensor_add.profile.json"),
    )

    got = np.load(OUT / "c.npy")
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(got, want.astype(np.float32)), "tensor_add does not match numpy"
    print("tensor_add: matches numpy exactly (bfloat16, 128x512)\n")

    sys.path.insert(0, str(HERE))
    from matmul_tiled import matmul_tiled

    lhsT = rng.standard_normal((256, 256)).astype(np.float32)
    rhs = rng.standard_normal((256, 1024)).astype(np.float32)
    kernel = nkic.compile(matmul_tiled, lhsT, rhs, target="trn2")
    result = kernel(lhsT, rhs)
    want = lhsT.T.astype(np.float64) @ rhs.astype(np.float64)
    err = np.max(np.abs(result - want)) / np.max(np.abs(want))
    assert err < 1e-5, f"matmul_tiled relative error {err:.2e}"
    prof = kernel.profile
    print(f"matmul_tiled [256x256]^T @ [256x1024] via nkic.compile: max relative error {err:.1e}")
    print(
        f"  estimated {prof['total_ns'] / 1000:.1f} us on {prof['target']}, "
        f"{prof['instructions']} instructions, bottleneck: {prof['bottleneck']}"
    )
    print("\ndemo OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
