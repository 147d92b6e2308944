# args: x=float32[128,512]
import neuronxcc.nki.language as bnl  # expect: err_unsupported_api@1
import nki
import nki.isa as nisa
import nki.language as nl
import not_a_module
import torch


@nki.jit
def names(x):
    y = undefined + 1  # noqa: F821  # expect: err_undefined_name@9
    z = y * 2  # silent: y already failed
    t = nl.ndarry((128, 512), nl.float32)  # expect: err_unknown_api@9
    nisa.tensor_copy(dst=t, src=t)  # silent: t already failed
    nisa.activaton(dst=x, op=nl.exp, data=x)  # expect: err_unknown_api@5
    u = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=u, op=nl.expp, data=u)  # expect: err_unknown_api@31
    nisa.activation(dst=u, op=nl.exp, data=u, sacle=2.0)  # expect: err_unexpected_keyword@47
    nisa.tensor_tensor(u, u, u)  # expect: err_missing_argument@5
    nisa.tensor_copy(dst=u, src=u, engine=nisa.engine.vektor)  # expect: err_unknown_api@43
    nl.fmod(x, x)  # expect: err_unsupported_api@5
    nl.arange(4)  # expect: err_unsupported_api@5
    u.missing_attr  # noqa: B018  # expect: err_attribute_error@5
    not_a_module.helper(u)  # expect: err_import_error@5
    torch.zeros(3)  # expect: err_import_error@5
