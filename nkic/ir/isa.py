"""The `nki.isa` instruction catalogue: NKI 0.3.0 signatures, operand roles, engines, targets.

One table serves the frontend (binding call arguments), the verifier, the semantic passes and
the backend (engine choice). Operand roles: `out` a tensor the instruction writes, `in` a tensor
it reads, `val` a tensor it reads or a compile-time scalar (an immediate); every other parameter
is a compile-time attribute whose kind says how the frontend converts it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .target import TARGET_NAMES

REQUIRED = object()

TENSOR_ROLES = ("out", "in", "val", "ins")


@dataclass(frozen=True)
class Param:
    name: str
    role: str  # "out" | "in" | "val" | "ins" (a list of input tensors) | "attr"
    kind: str  # for attrs: "alu", "act", "enum:<name>", "bool", "int", "float", "ints", "dtype", "str", "any"
    default: object = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def is_tensor(self) -> bool:
        return self.role in TENSOR_ROLES


@dataclass(frozen=True)
class InstrDef:
    name: str
    params: tuple[Param, ...]
    engines: tuple[str, ...]  # allowed engines, preferred first
    min_target: str = "trn1"

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.role == "out")

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.role in ("in", "val", "ins"))


def target_at_least(target: str, minimum: str) -> bool:
    return TARGET_NAMES.index(target) >= TARGET_NAMES.index(minimum)


def _parse(sig: str) -> tuple[Param, ...]:
    """Parse `name:role[:kind][=default]` items; defaults are Python literals or enum names."""
    params = []
    for item in sig.split(","):
        item = item.strip()
        default: object = REQUIRED
        if "=" in item:
            item, dtext = item.split("=", 1)
            default = _literal(dtext.strip())
        name, _, spec = item.partition(":")
        if spec in TENSOR_ROLES:
            role, kind = spec, "tensor"
        else:
            role, kind = "attr", spec
        params.append(Param(name, role, kind, default))
    params.append(Param("name", "attr", "str", None))
    return tuple(params)


def _literal(text: str) -> object:
    consts = {"None": None, "True": True, "False": False, "()": ()}
    if text in consts:
        return consts[text]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text  # an enum member or ALU op name


FP32_MIN = -3.4028234663852886e38

_V, _S, _G, _T, _D = "vector", "scalar", "gpsimd", "tensor", "dma"

# fmt: off
_CATALOG = [
    # data movement
    ("dma_copy", "dst:out, src:in, oob_mode:enum:oob_mode=error, dge_mode:enum:dge_mode=unknown, engine:enum:engine=unknown", (_D,)),
    ("dma_transpose", "dst:out, src:in, axes:ints=None, dge_mode:enum:dge_mode=unknown, oob_mode:enum:oob_mode=error", (_D,), "trn2"),
    ("dma_compute", "dst:out, srcs:ins, reduce_op:alu, scales:floats=None, unique_indices:bool=True, oob_mode:enum:oob_mode=error", (_D,)),
    ("tensor_copy", "dst:out, src:in, engine:enum:engine=unknown", (_V, _G, _S)),
    ("memset", "dst:out, value:scalar, engine:enum:engine=unknown", (_V, _G)),
    ("tensor_copy_predicated", "dst:out, src:val, predicate:in, reverse_pred:bool=False", (_V,)),
    # tensor engine
    ("nc_matmul", "dst:out, stationary:in, moving:in, is_stationary_onezero:bool=False, is_moving_onezero:bool=False, is_transpose:bool=False, accumulate:bool=None, tile_position:ints=(), tile_size:ints=(), perf_mode:enum:matmul_perf_mode=none", (_T,)),
    ("nc_matmul_mx", "dst:out, stationary:in, moving:in, stationary_scale:in, moving_scale:in, tile_position:ints=None, tile_size:ints=None, accumulate:bool=None", (_T,), "trn3"),
    ("nc_transpose", "dst:out, data:in, engine:enum:engine=unknown", (_T, _V)),
    # vector / scalar / gpsimd
    ("tensor_tensor", "dst:out, data1:in, data2:in, op:alu, engine:enum:engine=unknown", (_V, _G)),
    ("tensor_scalar", "dst:out, data:in, op0:alu, operand0:val, reverse0:bool=False, op1:alu=None, operand1:val=None, reverse1:bool=False, engine:enum:engine=unknown", (_V, _S, _G)),
    ("scalar_tensor_tensor", "dst:out, data:in, op0:alu, operand0:val, op1:alu, operand1:in, reverse0:bool=False, reverse1:bool=False", (_V,)),
    ("tensor_scalar_reduce", "dst:out, data:in, op0:alu, operand0:val, reduce_op:alu, reduce_res:out=None, reverse0:bool=False", (_V,)),
    ("tensor_scalar_cumulative", "dst:out, src:in, op0:alu, op1:alu, imm0:val, imm1:val=None, reduce_cmd:enum:reduce_cmd=reset_reduce", (_V,)),
    ("tensor_reduce", "dst:out, op:alu, data:in, axis:ints, negate:bool=False, keepdims:bool=False", (_V,)),
    ("tensor_partition_reduce", "dst:out, op:alu, data:in", (_G,)),
    ("tensor_tensor_scan", "dst:out, data0:in, data1:in, initial:val, op0:alu, op1:alu, reverse0:bool=False, reverse1:bool=False", (_V,)),
    ("reciprocal", "dst:out, data:in", (_V,)),
    ("exponential", "dst:out, src:in, max_value:val=0.0, reduce_res:out=None, reduce_cmd:enum:reduce_cmd=idle, reduce_init:val=0.0", (_V,), "trn3"),
    ("quantize_mx", "dst:out, src:in, dst_scale:out", (_V,), "trn3"),
    ("activation", "dst:out, op:act, data:in, bias:val=None, scale:val=1.0, reduce_op:alu=None, reduce_res:out=None, reduce_cmd:enum:reduce_cmd=idle", (_S,)),
    ("activation_reduce", "dst:out, op:act, data:in, reduce_op:alu, reduce_res:out, bias:val=None, scale:val=1.0", (_S,)),
    ("activate2", "dst:out, op:act, data:in, imm0:val, imm1:val, op0:alu, op1:alu, relu_param:float=0.0, reverse0:bool=False, reverse1:bool=False, reduce_op:alu=None, reduce_res:out=None, reduce_cmd:enum:reduce_cmd=idle", (_S,), "trn3"),
    ("dropout", "dst:out, data:in, prob:val", (_V,)),
    ("bn_stats", "dst:out, data:in", (_V,)),
    ("bn_aggr", "dst:out, data:in", (_V,)),
    ("range_select", f"dst:out, on_true_tile:in, comp_op0:alu, comp_op1:alu, bound0:in, bound1:in, reduce_cmd:enum:reduce_cmd=reset_reduce, reduce_res:out=None, reduce_op:alu=maximum, range_start:int=0, on_false_value:float={FP32_MIN!r}", (_V,), "trn2"),
    ("select_reduce", "dst:out, predicate:in, on_true:in, on_false:val, reduce_res:out=None, reduce_cmd:enum:reduce_cmd=idle, reduce_op:alu=maximum, reverse_pred:bool=False", (_V,)),
    # indexing / gather / shuffle / search
    ("iota", "dst:out, pattern:pattern, offset:int=0, channel_multiplier:int=0", (_G,)),
    ("affine_select", "dst:out, pattern:pattern, channel_multiplier:int, on_true_tile:in, on_false_value:float, cmp_op:alu=equal, offset:int=0", (_G,)),
    ("local_gather", "dst:out, src_buffer:in, index:in, num_elem_per_idx:int=1, num_valid_indices:int=None", (_G,)),
    ("nc_n_gather", "dst:out, data:in, indices:in", (_G,)),
    ("nc_stream_shuffle", "dst:out, src:in, shuffle_mask:ints", (_V,)),
    ("max8", "dst:out, src:in", (_V,)),
    ("topk", "val_dst:out, idx_dst:out, src:in, n:int", (_G,)),
    ("nc_find_index8", "dst:out, data:in, vals:in", (_V,)),
    ("nc_match_replace8", "dst:out, data:in, vals:in, imm:float, dst_idx:out=None", (_V,)),
    ("sequence_bounds", "dst:out, segment_ids:in", (_G,)),
    ("nonzero_with_count", "dst:out, src:in, index_offset:int=0, padding_val:int=-1", (_G,), "trn2"),
    # random numbers
    ("rng", "dst:out, engine:enum:engine=unknown", (_V, _G)),
    ("rand2", "dst:out, min:val, max:val", (_V,), "trn3"),
    ("set_rng_seed", "src_seeds:in", (_V,)),
    ("rand_set_state", "src_seeds:in, engine:enum:engine=unknown", (_G, _V), "trn2"),
    ("rand_get_state", "dst:out, engine:enum:engine=unknown", (_G, _V), "trn2"),
    # the other core of an LNC=2 launch
    ("core_barrier", "data:out, cores:ints=None, engine:enum:engine=unknown", (_G,), "trn2"),
    ("sendrecv", "src:in, dst:out, send_to_rank:int, recv_from_rank:int, pipe_id:int=0, dma_engine:enum:dma_engine=dma", (_G,), "trn2"),
    # nki.collectives between the two cores of the launch (bound as ncc.*, not nisa.*)
    ("all_reduce", "dst:out, src:in, op:alu", (_G,), "trn2"),
    ("all_gather", "dst:out, src:in, collective_dim:int=0", (_G,), "trn2"),
    ("reduce_scatter", "dst:out, src:in, op:alu, collective_dim:int=0", (_G,), "trn2"),
    ("all_to_all", "dst:out, src:in, collective_dim:int=0", (_G,), "trn2"),
    # engine-sequencer registers (`reg` tensors): nisa.register_* and NkiScalar arithmetic
    ("register_move", "dst:out, src:val", (_G,)),
    ("register_load", "dst:out, src:in", (_G,)),
    ("register_store", "dst:out, src:in", (_G,)),
    ("register_alu", "dst:out, data0:val, data1:val, op:alu", (_G,)),
]
#: `nki.collectives` calls in the catalogue (not `nki.isa` instructions).
COLLECTIVES = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all"})
#: Sequencer instructions on registers: bound by the frontend's register API, not as `nisa.*`.
REGISTER_OPS = frozenset({"register_move", "register_load", "register_store", "register_alu"})
#: Instructions that meet the other core of the launch (they need LNC=2).
CROSS_CORE = frozenset({"core_barrier", "sendrecv"}) | COLLECTIVES
# fmt: on

INSTRUCTIONS: dict[str, InstrDef] = {}
for _entry in _CATALOG:
    _name, _sig, _engines = _entry[:3]
    _min = _entry[3] if len(_entry) > 3 else "trn1"
    INSTRUCTIONS[_name] = InstrDef(_name, _parse(_sig), _engines, _min)

#: Enumerations of `nki.isa` (member name -> value), as in the NKI 0.3.0 API.
ENUMS: dict[str, dict[str, object]] = {
    "engine": {
        "unknown": 0,
        "tensor": 1,
        "scalar": 2,
        "gpsimd": 3,
        "dma": 4,
        "vector": 5,
        "sync": 6,
    },
    "reduce_cmd": {"idle": 0, "reset": 1, "reduce": 2, "reset_reduce": 3, "load_reduce": 4},
    "dge_mode": {"unknown": 0, "swdge": 1, "hwdge": 2, "none": 3},
    "oob_mode": {"error": 0, "skip": 1},
    "matmul_perf_mode": {"none": "none", "double_row": "double_row"},
    "nc_version": {"gen2": 2, "gen3": 3, "gen4": 4},
    "dma_engine": {"dma": 1, "gpsimd_dma": 2},
}

#: ALU operators usable as `op`/`op0`/`op1`/`reduce_op` (nki.language names).
# fmt: off
ALU_OPS = (
    "invert", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
    "add", "subtract", "multiply", "maximum", "minimum",
    "equal", "not_equal", "greater_equal", "greater", "less_equal", "less",
    "logical_and", "logical_or", "logical_xor", "logical_not", "power",
    "abs_max", "abs_min", "abs", "square", "relu", "rsqrt", "reciprocal", "average", "bypass",
)
# fmt: on
BITVEC_OPS = ("invert", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")

#: Activation functions of the Scalar engine (nki.language names).
# fmt: off
ACTIVATIONS = (
    "copy", "square", "sigmoid", "relu", "prelu", "gelu", "gelu_dx", "gelu_apprx_tanh",
    "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "silu", "silu_dx", "tanh", "softplus", "mish",
    "erf", "erf_dx", "exp", "log", "sin", "arctan", "sqrt", "rsqrt", "reciprocal", "sign", "abs",
    "bypass",
)
# fmt: on


def lookup(name: str) -> InstrDef | None:
    return INSTRUCTIONS.get(name)
