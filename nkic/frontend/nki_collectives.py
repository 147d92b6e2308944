"""`nki.collectives` within one LNC=2 launch: all-reduce, all-gather, reduce-scatter,
all-to-all, their variable-size `_v` forms (and the NKI 0.7 prepare/trigger split of those),
and collective permutes, between the launch's two cores, one tensor per call, each lowered to
one cross-core instruction of the catalogue (`nkic/ir/isa.py`).

Ranks are the launch's physical cores: the one replica group nkic can simulate is
`[[0, 1]]`. A group naming other ranks spans devices or launches, which one nkic run does not
simulate; it is `err_unsupported_api`.
"""

from __future__ import annotations

from . import nki_api as api
from .tensors import TensorView
from .values import Builtin, UserError

#: The one replica group a launch's own cores form.
LAUNCH_GROUP = ((0, 1),)
#: The NKI version that added each name (the others exist from 0.3 on).
SINCE = {
    "all_gather_v": "0.6",
    "all_to_all_v_prepare": "0.7",
    "all_to_all_v_trigger": "0.7",
    "all_gather_v_prepare": "0.7",
    "all_gather_v_trigger": "0.7",
}


def replica_group(ip, call, groups=None, *args, **kwargs):
    """`ncc.ReplicaGroup(groups)`: the groups as a tuple of rank tuples."""
    try:
        return tuple(tuple(int(r) for r in g) for g in groups)
    except (TypeError, ValueError):
        raise UserError(
            "err_invalid_argument",
            f"ReplicaGroup expects lists of ranks, got {groups!r}",
            call.node,
            "ncc.ReplicaGroup([[0, 1]]) for the two cores of the launch",
        ) from None


def _check_group(call, name: str, group) -> None:
    if group is None or tuple(map(tuple, group)) == LAUNCH_GROUP:
        return
    listed = [r for g in group for r in g]
    shown = [list(g) for g in group]
    if len(set(listed)) != len(listed):
        raise UserError(
            "err_invalid_argument",
            f"ncc.{name}: replica group {shown} lists rank "
            f"{max(listed, key=listed.count)} twice; its rank lists must not overlap",
            call.node,
            "ncc.ReplicaGroup([[0, 1]]) for the two cores of the launch",
        )
    beyond = sorted(r for r in set(listed) if r not in (0, 1))
    if beyond:
        what = (
            f"ranks {beyond} are cores of other launches or devices, which nkic does not "
            "simulate (one run is one LNC=2 launch, ranks 0 and 1)"
        )
    elif all(len(g) == 1 for g in group):
        what = (
            "groups of one core each make the collective a local copy on every core; nkic "
            "simulates the group of both cores of the launch only"
        )
    else:
        what = "nkic simulates the group of both cores of the launch, in core order, only"
    raise UserError(
        "err_unsupported_api",
        f"ncc.{name}: replica group {shown}: {what}",
        call.node,
        "use ncc.ReplicaGroup([[0, 1]]); check a multi-device kernel rank by rank on hardware",
    )


def _one(call, what: str, tensors, name: str):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != 1:
        raise UserError(
            "err_unsupported_api",
            f"ncc.{name}: {what} must be a list of one tensor (coalesced collectives over "
            "several tensors are not supported by nkic yet)",
            call.node,
            f"call ncc.{name} once per tensor",
        )
    return tensors[0]


def _emit(ip, call, name: str, srcs, dsts, group, **attrs):
    src, dst = _one(call, "srcs", srcs, name), _one(call, "dsts", dsts, name)
    _check_group(call, name, group)
    values = {"dst": dst, "src": src, **{k: v for k, v in attrs.items() if v is not None}}
    api.emit_isa(ip, name, values, {k: call.node for k in values}, call)


def _all_reduce(ip, call, srcs, dsts, replica_group=None, op=None, priority=None, name=None):
    _emit(ip, call, "all_reduce", srcs, dsts, replica_group, op=op)


def _all_gather(
    ip, call, srcs, dsts, replica_group=None, collective_dim=0, priority=None, name=None
):
    _emit(ip, call, "all_gather", srcs, dsts, replica_group, collective_dim=collective_dim)


def _reduce_scatter(
    ip, call, srcs, dsts, replica_group=None, collective_dim=0, op=None, priority=None, name=None
):
    _emit(
        ip, call, "reduce_scatter", srcs, dsts, replica_group, collective_dim=collective_dim, op=op
    )


def _all_to_all(
    ip, call, srcs, dsts, replica_group=None, collective_dim=0, priority=None, name=None
):
    _emit(ip, call, "all_to_all", srcs, dsts, replica_group, collective_dim=collective_dim)


# --- variable-size collectives and their prepare/trigger split ------------------------------


class Prepared:
    """What `ncc.<op>_prepare` returns: the arguments its trigger reuses."""

    def __init__(self, op: str, args: dict, node):
        self.op = op
        self.args = args
        self.node = node
        self.triggered = False

    def __repr__(self) -> str:
        return f"<ncc.{self.op}_prepare instruction>"


def _v_values(ip, call, name, srcs, dsts, replica_group, metadata_tensor, recv_counts_known,
              has_rdispls) -> dict:  # fmt: skip
    src, dst = _one(call, "srcs", srcs, name), _one(call, "dsts", dsts, name)
    _check_group(call, name, replica_group)
    if metadata_tensor is None:
        raise UserError(
            "err_invalid_argument",
            f"ncc.{name} needs `metadata_tensor` (uint32 counts and displacements)",
            call.node,
        )
    if name == "all_gather_v" and has_rdispls:
        raise UserError(
            "err_unsupported_api",
            "ncc.all_gather_v: has_rdispls=True is not supported by NKI (its documented "
            "limitation); chunks land in equal slots of dst",
            call.node,
            "drop has_rdispls and size dst as one equal slot per rank",
        )
    values = {
        "dst": dst,
        "src": src,
        "metadata": metadata_tensor,
        "recv_counts_known": bool(recv_counts_known),
        "has_rdispls": bool(has_rdispls),
    }
    if not recv_counts_known:  # row 2 receives the counts
        values["dst_counts"] = metadata_tensor
    return values


def _emit_v(ip, call, name: str, values: dict, prepared: bool = False) -> None:
    values = {**values, "prepared": prepared}
    api.emit_isa(ip, name, values, {k: call.node for k in values}, call)


def _v(name: str):
    def plain(ip, call, srcs, dsts, replica_group=None, metadata_tensor=None,
              recv_counts_known=False, has_rdispls=False, priority=None, name_=None, **kw):  # fmt: skip
        values = _v_values(ip, call, name, srcs, dsts, replica_group, metadata_tensor,
                           recv_counts_known, has_rdispls)  # fmt: skip
        _emit_v(ip, call, name, values)

    return plain


def _pending(ip) -> Prepared | None:
    return getattr(ip, "_ncc_prepared", None)


def _prepare(name: str):
    def prepare(ip, call, srcs, dsts, replica_group=None, metadata_tensor=None,
                recv_counts_known=False, has_rdispls=False, priority=None, **kw):  # fmt: skip
        values = _v_values(ip, call, name, srcs, dsts, replica_group, metadata_tensor,
                           recv_counts_known, has_rdispls)  # fmt: skip
        pending = _pending(ip)
        if pending is not None:
            from ..diagnostics import Related

            err = UserError(
                "nkic_collective_prepare_slot",
                f"ncc.{name}_prepare while ncc.{pending.op}_prepare is still waiting for its "
                "trigger: prepares share one slot",
                call.node,
                f"call ncc.{pending.op}_trigger on the earlier prepare first",
            )
            err.related = (Related(ip.loc(pending.node), "the pending prepare"),)
            raise err
        api.emit_isa(ip, f"{name}_prepare", {"metadata": metadata_tensor}, {}, call)
        handle = Prepared(name, values, call.node)
        ip._ncc_prepared = handle
        return handle

    return prepare


def _trigger(name: str):
    def trigger(ip, call, prepare_instr=None, name_=None, **kw):
        pending = _pending(ip)
        if not isinstance(prepare_instr, Prepared) or prepare_instr.op != name:
            raise UserError(
                "err_invalid_argument",
                f"ncc.{name}_trigger takes the instruction ncc.{name}_prepare returned, got "
                f"{prepare_instr!r}",
                call.node,
                f"h = ncc.{name}_prepare(...); ...; ncc.{name}_trigger(h)",
            )
        if prepare_instr is not pending or prepare_instr.triggered:
            raise UserError(
                "nkic_collective_prepare_slot",
                f"ncc.{name}_trigger of a prepare that is not the pending one (it was "
                "triggered already, or a later prepare took the slot)",
                call.node,
                "trigger each prepare exactly once, before the next prepare",
            )
        prepare_instr.triggered = True
        ip._ncc_prepared = None
        _emit_v(ip, call, name, prepare_instr.args, prepared=True)

    return trigger


# --- collective permutes ------------------------------------------------------------------


def _collective_permute(ip, call, srcs, dsts, source_target_pairs=None, priority=None,
                        name=None):  # fmt: skip
    src, dst = (
        _one(call, "srcs", srcs, "collective_permute"),
        _one(call, "dsts", dsts, "collective_permute"),
    )
    try:
        pairs = [(int(s), int(t)) for s, t in source_target_pairs]
    except (TypeError, ValueError):
        raise UserError(
            "err_invalid_argument",
            f"ncc.collective_permute: source_target_pairs must be (source, target) rank pairs, "
            f"got {source_target_pairs!r}",
            call.node,
        ) from None
    beyond = sorted({r for p in pairs for r in p if r not in (0, 1)})
    if beyond:
        raise UserError(
            "err_unsupported_api",
            f"ncc.collective_permute: ranks {beyond} are cores of other launches or devices, "
            "which nkic does not simulate (one run is one LNC=2 launch, ranks 0 and 1)",
            call.node,
            "permute between ranks 0 and 1",
        )
    for what, t in (("srcs", src), ("dsts", dst)):
        if isinstance(t, TensorView) and t.buffer not in ("hbm", "shared_hbm"):
            raise UserError(
                "err_unsupported_memory",
                f"ncc.collective_permute: {what} is in {t.buffer}; its tensors must reside on "
                "HBM (SBUF is not supported)",
                call.node,
                "copy the tile to an HBM tensor first, or use collective_permute_implicit",
            )
    targets = [t for _, t in pairs]
    if len(set(targets)) != len(targets):
        raise UserError(
            "err_invalid_argument",
            f"ncc.collective_permute: rank {max(targets, key=targets.count)} is the target of "
            "two pairs; each rank receives at most once",
            call.node,
        )
    flat = tuple(r for p in pairs for r in p)
    values = {"dst": dst, "src": src, "pairs": flat}
    api.emit_isa(ip, "collective_permute", values, {k: call.node for k in values}, call)


def _channels(call, name: str, by_channel, what: str, channel_ids) -> list:
    if not isinstance(by_channel, (list, tuple)) or not by_channel:
        raise UserError(
            "err_invalid_argument", f"ncc.{name}: {what} must be a list of tensor lists", call.node
        )
    if list(channel_ids) != list(range(len(by_channel))):
        raise UserError(
            "err_invalid_argument",
            f"ncc.{name}: channel_ids {list(channel_ids)} must be 0, 1, ... one per channel of "
            f"{what}",
            call.node,
        )
    return [_one(call, what, ch, name) for ch in by_channel]


def _permute_implicit(ip, call, srcs_by_channel, dsts_by_channel, replica_group=None,
                      channel_ids=(0,), priority=None, name=None):  # fmt: skip
    op = "collective_permute_implicit"
    _check_group(call, op, replica_group)
    srcs = _channels(call, op, srcs_by_channel, "srcs_by_channel", channel_ids)
    dsts = _channels(call, op, dsts_by_channel, "dsts_by_channel", channel_ids)
    for src, dst in zip(srcs, dsts, strict=False):  # the ring successor is the other core
        values = {"dst": dst, "src": src, "pairs": (0, 1, 1, 0)}
        api.emit_isa(ip, "collective_permute", values, {k: call.node for k in values}, call)


def _permute_implicit_reduce(ip, call, srcs0_by_channel, srcs1_by_channel, dsts_by_channel,
                             replica_group=None, op=None, channel_ids=(0,), priority=None,
                             name=None):  # fmt: skip
    what = "collective_permute_implicit_reduce"
    _check_group(call, what, replica_group)
    srcs0 = _channels(call, what, srcs0_by_channel, "srcs0_by_channel", channel_ids)
    srcs1 = _channels(call, what, srcs1_by_channel, "srcs1_by_channel", channel_ids)
    dsts = _channels(call, what, dsts_by_channel, "dsts_by_channel", channel_ids)
    for s0, s1, dst in zip(srcs0, srcs1, dsts, strict=False):
        values = {"dst": dst, "src": s0, "src1": s1, "op": op}
        api.emit_isa(ip, "collective_permute_reduce", values, {k: call.node for k in values}, call)


def _current_processing_rank_id(ip, call, iteration_id=None, replica_group=None, channel_id=0,
                                name=None):  # fmt: skip
    what = "collective_permute_implicit_current_processing_rank_id"
    _check_group(call, what, replica_group)
    step = ip.need_int(iteration_id, "an integer ring step for 'iteration_id'")
    ip.kernel.reads_core = True
    # iteration 0 is this core's own data; each later step, the predecessor's of the step
    # before: around a ring of the launch's 2 cores, the core of step i is core + i mod 2
    return (ip.kernel.core + step) % 2


def _rank_id(ip, call, name=None):
    ip.kernel.reads_core = True
    return ip.kernel.core


def bindings(version: str = "0.3") -> dict[str, object]:
    """The `nki.collectives` names of NKI `version` ("0.3" ... "0.7")."""
    fns = {
        "all_reduce": _all_reduce,
        "all_gather": _all_gather,
        "reduce_scatter": _reduce_scatter,
        "all_to_all": _all_to_all,
        "all_to_all_v": _v("all_to_all_v"),
        "all_gather_v": _v("all_gather_v"),
        "all_to_all_v_prepare": _prepare("all_to_all_v"),
        "all_to_all_v_trigger": _trigger("all_to_all_v"),
        "all_gather_v_prepare": _prepare("all_gather_v"),
        "all_gather_v_trigger": _trigger("all_gather_v"),
        "collective_permute": _collective_permute,
        "collective_permute_implicit": _permute_implicit,
        "collective_permute_implicit_reduce": _permute_implicit_reduce,
        "collective_permute_implicit_current_processing_rank_id": _current_processing_rank_id,
        "rank_id": _rank_id,
    }
    number = tuple(map(int, version.split(".")))
    out: dict[str, object] = {
        n: Builtin(f"ncc.{n}", fn, nki_api=True)
        for n, fn in fns.items()
        if tuple(map(int, SINCE.get(n, "0.3").split("."))) <= number
    }
    out["ReplicaGroup"] = Builtin("ncc.ReplicaGroup", replica_group)
    return out
