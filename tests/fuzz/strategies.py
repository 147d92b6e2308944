"""Hypothesis strategies: `.neff` programs built from valid parts put together at random, and
small element-wise kernels with a numpy reference."""

from __future__ import annotations

from hypothesis import strategies as st

DTYPES = ["float32", "bfloat16", "float16", "int32"]
ALU = {"add": "+", "subtract": "-", "multiply": "*", "maximum": "max"}


@st.composite
def programs(draw) -> dict:
    """A program JSON: a few tensors, instructions over them with random access patterns,
    waits and loops. Many are invalid; all must load or be refused cleanly."""
    tensors = []
    for tid in range(draw(st.integers(1, 5))):
        buffer = draw(st.sampled_from(["hbm", "shared_hbm", "sbuf", "psum"]))
        shape = draw(st.lists(st.integers(1, 300), min_size=1, max_size=3))
        tensor = {
            "id": tid,
            "name": f"t{tid}",
            "kind": "internal"
            if buffer in ("sbuf", "psum")
            else draw(st.sampled_from(["input", "output", "internal"])),
            "buffer": buffer,
            "dtype": draw(st.sampled_from(DTYPES)),
            "shape": shape,
        }
        if buffer in ("sbuf", "psum"):
            tensor["address"] = {
                "partition": draw(st.integers(0, 130)),
                "byte": draw(st.integers(0, 20000)),
            }
        tensors.append(tensor)
    ids = st.integers(0, len(tensors) - 1)
    pattern = st.lists(
        st.lists(st.integers(-4, 600), min_size=2, max_size=2).map(
            lambda p: [p[0], max(p[1] % 130, 1)]
        ),
        min_size=1,
        max_size=3,
    )
    ap = st.fixed_dictionaries({"tensor": ids, "offset": st.integers(-8, 600), "pattern": pattern})
    count = draw(st.integers(1, 6))
    body, loop = [], None
    for iid in range(count):
        op, engine, operands = draw(
            st.sampled_from(
                [
                    ("dma_copy", "dma", ("dst", "src")),
                    ("tensor_copy", "vector", ("dst", "src")),
                    ("tensor_tensor", "vector", ("dst", "data1", "data2")),
                    ("tensor_tensor", "gpsimd", ("dst", "data1", "data2")),
                    ("activation", "scalar", ("dst", "data")),
                ]
            )
        )
        node = {
            "kind": "inst",
            "id": iid,
            "op": op,
            "engine": engine,
            "queue": "dma0" if engine == "dma" else engine,
            "operands": {name: draw(ap) for name in operands},
            "attrs": {"op": draw(st.sampled_from(list(ALU)))}
            if op == "tensor_tensor"
            else ({"op": "exp"} if op == "activation" else {}),
            "waits": draw(
                st.lists(
                    st.lists(st.integers(0, count - 1), min_size=1, max_size=1).map(
                        lambda w: [w[0], 0]
                    ),
                    max_size=2,
                )
            ),
            "loc": [0, 10 + iid, 1, 10 + iid, 20],
        }
        if loop is None and draw(st.booleans()):
            loop = {
                "kind": "loop",
                "var": "i",
                "start": 0,
                "stop": draw(st.integers(1, 4)),
                "step": 1,
                "mode": "affine",
                "loc": [0, 5, 1, 5, 20],
                "body": [],
            }
            body.append(loop)
        (loop["body"] if loop is not None and draw(st.booleans()) else body).append(node)
    hbm = [t["id"] for t in tensors if t["buffer"] in ("hbm", "shared_hbm")]
    return {
        "kernel": "k",
        "target": draw(st.sampled_from(["trn1", "trn2", "trn3"])),
        "files": ["k.py"],
        "tensors": tensors,
        "inputs": [t for t in hbm if tensors[t]["kind"] == "input"],
        "outputs": [t for t in hbm if tensors[t]["kind"] == "output"],
        "body": body,
    }


@st.composite
def elementwise_kernels(draw) -> tuple[str, tuple[int, int], list[str]]:
    """Source of a one-tile kernel applying a chain of ALU ops to two inputs, its shape, and
    the chain (for the numpy reference)."""
    shape = (draw(st.integers(1, 128)), draw(st.integers(1, 256)))
    chain = draw(st.lists(st.sampled_from(list(ALU)), min_size=1, max_size=4))
    lines = [
        "import nki",
        "import nki.isa as nisa",
        "import nki.language as nl",
        "",
        "",
        "@nki.jit",
        "def chain(a, b):",
        "    P, F = a.shape",
        "    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)",
        "    x = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)",
        "    y = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)",
        "    nisa.dma_copy(dst=x, src=a)",
        "    nisa.dma_copy(dst=y, src=b)",
    ]
    for i, op in enumerate(chain):
        lines += [
            f"    z{i} = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)",
            f"    nisa.tensor_tensor(dst=z{i}, data1={'x' if i == 0 else f'z{i - 1}'}, "
            f"data2=y, op=nl.{op})",
        ]
    lines += [f"    nisa.dma_copy(dst=out, src=z{len(chain) - 1})", "    return out", ""]
    return "\n".join(lines), shape, chain
