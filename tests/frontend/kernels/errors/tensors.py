# args: x=float32[128,512]
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tensors(x):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    if t:  # expect: err_dynamic_control_flow_not_supported@8
        pass
    while x:  # expect: err_dynamic_control_flow_not_supported@11
        pass
    a = t and 1  # expect: err_ambiguous_tensor_truth_value@9
    b = not t  # expect: err_ambiguous_tensor_truth_value@13
    assert t  # expect: err_ambiguous_tensor_truth_value@12
    c = t + 1  # expect: err_tensor_operator@9
    d = t[0:256, :]  # expect: err_tensor_access_out_of_bound@9
    e = t[:, 600]  # expect: err_tensor_access_out_of_bound@9
    f = t[:, :, 0]  # expect: err_invalid_index@9
    g = t[::2, :]  # expect: err_invalid_view@9
    h = t.reshape((64, 1024))  # expect: err_invalid_view@9
    i = t.permute((1, 0))  # expect: err_invalid_view@9
    j = t.ap([[1, 128], [1, 512]])  # expect: err_invalid_view@9
    k = x[0:128, 0:100].reshape((100, 128))  # expect: err_invalid_view@9
    t2 = nl.ndarray((128, 512), nl.float32, buffer="sbuf")  # expect: err_invalid_argument@45
    nisa.dma_copy(dst=t, src=x, dge_mode=7)  # expect: err_invalid_argument@33
    nisa.tensor_tensor(dst=t, data1=t, data2=t, op=nl.exp)  # expect: err_invalid_argument@49
    nisa.tensor_tensor(dst=t, data1=t, data2=3, op=nl.add)  # expect: err_invalid_argument@40
    x[0:1, 0:1] = 0.0  # expect: err_unsupported_memory@5
    for row in t:  # noqa: B007  # expect: err_dynamic_control_flow_not_supported@16
        pass
    return t  # expect: err_output_not_shared_hbm@12
