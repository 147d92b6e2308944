"""Shared kernel helpers: stage HBM inputs on chip, run one `nki.isa` instruction, store results.

Operand specs (compile-time dicts):
* input  ``{"t": i, "buf": "sbuf"|"psum"|"hbm", "p0": start_partition, "dtype": view_dtype}``:
  tensor argument number ``i``; on chip it is copied into a tile that starts at partition
  ``p0`` (PSUM inputs go through SBUF and a Vector ``tensor_copy``).  A list of specs is a
  list operand (``dma_compute`` ``srcs``).  Anything else is passed as it is.
* output ``{"shape": ..., "dtype": ..., "buf": ..., "p0": ..., "init": i}``: a new tile,
  pre-filled from tensor argument ``init`` when given (instructions that keep part of ``dst``).
Attribute strings ``"nl.add"``, ``"rc.reset"``, ``"eng.gpsimd"``, ``"dge.hwdge"``,
``"oob.skip"``, ``"pm.double_row"`` name the NKI constants.
"""

import nki.isa as nisa
import nki.language as nl

_ENUMS = {
    "rc.": "reduce_cmd",
    "eng.": "engine",
    "dge.": "dge_mode",
    "oob.": "oob_mode",
    "pm.": "matmul_perf_mode",
}


def conv(v):
    if isinstance(v, str):
        if v.startswith("nl."):
            return getattr(nl, v[3:])
        for prefix, enum in _ENUMS.items():
            if v.startswith(prefix):
                return getattr(getattr(nisa, enum), v[len(prefix) :])
    return v


def _buffer(name):
    if name == "psum":
        return nl.psum
    if name == "hbm":
        return nl.shared_hbm
    return nl.sbuf


def stage_in(x, spec):
    buf = spec.get("buf", "sbuf")
    if buf == "hbm":
        return x
    p0 = spec.get("p0", 0)
    shape = (p0 + x.shape[0],) + tuple(x.shape[1:])
    t = nl.ndarray(shape, dtype=x.dtype, buffer=nl.sbuf)
    v = t[p0 : p0 + x.shape[0]]
    nisa.dma_copy(dst=v, src=x)
    if buf == "psum":
        tp = nl.ndarray(shape, dtype=x.dtype, buffer=nl.psum)
        vp = tp[p0 : p0 + x.shape[0]]
        nisa.tensor_copy(dst=vp, src=v, engine=nisa.engine.vector)
        v = vp
    if spec.get("dtype") is not None:
        v = v.view(spec["dtype"])
    return v


def operand(tensors, spec):
    if isinstance(spec, list):
        return [operand(tensors, s) for s in spec]
    if isinstance(spec, dict) and "t" in spec:
        return stage_in(tensors[spec["t"]], spec)
    return conv(spec)


def new_out(tensors, spec):
    buf = spec.get("buf", "sbuf")
    shape = tuple(spec["shape"])
    if buf == "hbm":
        t = nl.ndarray(shape, dtype=spec["dtype"], buffer=nl.shared_hbm)
        return t, t
    if spec.get("init") is not None:
        ispec = {"t": spec["init"], "buf": buf, "p0": spec.get("p0", 0)}
        v = stage_in(tensors[spec["init"]], ispec)
        return v, v
    p0 = spec.get("p0", 0)
    t = nl.ndarray((p0 + shape[0],) + shape[1:], dtype=spec["dtype"], buffer=_buffer(buf))
    v = t[p0 : p0 + shape[0]]
    return v, v


def store(v, spec):
    buf = spec.get("buf", "sbuf")
    if buf == "hbm":
        return v
    out = nl.ndarray(v.shape, dtype=v.dtype, buffer=nl.shared_hbm)
    if buf == "psum":
        s = nl.ndarray(v.shape, dtype=v.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=s, src=v, engine=nisa.engine.vector)
        v = s
    nisa.dma_copy(dst=out, src=v)
    return out


def apply(tensors, instr, ins, outs, attrs):
    kw = {}
    for name, spec in ins.items():
        kw[name] = operand(tensors, spec)
    views = []
    for name, spec in outs.items():
        _, v = new_out(tensors, spec)
        kw[name] = v
        views.append((v, spec))
    for name, value in attrs.items():
        kw[name] = conv(value)
    getattr(nisa, instr)(**kw)
    results = [store(v, spec) for v, spec in views]
    if len(results) == 1:
        return results[0]
    return tuple(results)
