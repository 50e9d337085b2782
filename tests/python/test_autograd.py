"""Autograd: gradients against torch.autograd, graph mechanics, grad mode, in-place safety, memory."""

from __future__ import annotations

import threading

import magnetron as mag
import numpy as np
import pytest
from autograd_helpers import check_grad

BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]


@pytest.mark.parametrize("shapes", BINARY_SHAPES)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_binary_grads_broadcast(name: str, shapes: tuple) -> None:
    low = 0.5 if name == "div" else -2.0
    check_grad(lambda a, b: getattr(a, name)(b), shapes, low=low)


@pytest.mark.parametrize("name", ["neg", "exp"])
def test_unary_grads(name: str) -> None:
    check_grad(lambda a: getattr(a, name)(), [(3, 5)], transpose=True)


def test_view_grads_match_torch() -> None:
    check_grad(lambda a: a.T[1:, ::2] * 3.0, [(4, 5)])
    check_grad(lambda a: a.reshape(2, 10).permute(1, 0)[::3], [(4, 5)])
    check_grad(lambda a: a.unsqueeze(1).expand(4, 3, 5) * a.unsqueeze(1), [(4, 5)])
    check_grad(lambda a: a[1] + a[:, 2].unsqueeze(1).squeeze(1)[1:2], [(4, 5)])
    check_grad(lambda a: a.transpose(0, 1).reshape(-1), [(4, 5)], transpose=True)


def test_negative_step_view_grad() -> None:  # torch has no negative steps: compare with the flipped weights
    a = mag.Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (a.T[::-1] * mag.Tensor([[1.0, 10.0], [100.0, 1000.0]])).backward(mag.Tensor.ones(2, 2))
    assert a.grad.tolist() == [[100.0, 1.0], [1000.0, 10.0]]


def test_indexing_grads() -> None:
    idx = [0, 2, 2, 3]
    check_grad(lambda a: a[idx] * 2.0, [(4, 3)], torch_fn=lambda a: a[idx] * 2.0)
    check_grad(lambda a: a[:, [1, 1]], [(4, 3)])


def test_cast_grad_flows_between_float_dtypes() -> None:
    x = mag.Tensor([1.0, 2.0], requires_grad=True)
    y = x.cast(mag.float64) * 3.0
    y.backward(mag.Tensor([1.0, 1.0], dtype=mag.float64))
    assert x.grad.dtype == mag.float32 and x.grad.tolist() == [3.0, 3.0]


def test_gradients_accumulate_on_leaves() -> None:
    x = mag.Tensor([1.0, 2.0], requires_grad=True)
    (x * x).backward(mag.Tensor.ones(2))
    (x * 3.0).backward(mag.Tensor.ones(2))
    assert x.grad.tolist() == [5.0, 7.0]
    x.grad = None
    assert x.grad is None


def test_backward_needs_grad_for_non_scalar() -> None:
    x = mag.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="one-element"):
        (x * 2.0).backward()


def test_no_grad_nests_and_restores() -> None:
    x = mag.Tensor([1.0], requires_grad=True)
    with mag.no_grad():
        assert not (x * 2.0).requires_grad
        with mag.enable_grad():
            assert (x * 2.0).requires_grad
        assert not (x * 2.0).requires_grad
    assert (x * 2.0).requires_grad

    @mag.no_grad()
    def f() -> mag.Tensor:
        return x * 2.0

    assert not f().requires_grad


def test_grad_mode_is_thread_local() -> None:
    x = mag.Tensor([1.0], requires_grad=True)
    seen = []
    with mag.no_grad():
        t = threading.Thread(target=lambda: seen.append((x * 2.0).requires_grad))
        t.start()
        t.join()
    assert seen == [True]


def test_detach_shares_storage_without_history() -> None:
    x = mag.Tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2.0).detach()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_inplace_on_leaf_requiring_grad_raises() -> None:
    x = mag.Tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.add_(1.0)


def test_inplace_write_to_saved_tensor_raises_at_backward() -> None:
    x = mag.Tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1.0)  # exp saved its output
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward(mag.Tensor.ones(2))


def test_inplace_ops_on_non_leaves_are_differentiated() -> None:
    x = mag.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2.0
    y.add_(1.0)
    y.mul_(x)
    y.backward(mag.Tensor.ones(3))
    assert x.grad.tolist() == [5.0, 9.0, 13.0]  # d/dx (2x + 1) x = 4x + 1


def test_long_chain_backward_has_no_recursion_limit() -> None:
    x = mag.Tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0
    y.backward(mag.Tensor.ones(2))
    assert x.grad.tolist() == [1.0, 1.0]
    del y  # freeing a 10k-node chain must not recurse either


def test_second_backward_needs_retain_graph() -> None:
    x = mag.Tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.backward(mag.Tensor.ones(2), retain_graph=True)
    y.backward(mag.Tensor.ones(2))
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward(mag.Tensor.ones(2))


def test_inference_keeps_memory_flat() -> None:
    w = mag.Tensor.normal(64, 64, requires_grad=True)
    x = mag.Tensor.normal(64, 64)

    def live() -> int:
        return mag.context.memory_stats()["live_bytes"]

    with mag.no_grad():
        for _ in range(10):
            y = (x * w).exp()
        before = live()
        for _ in range(1000):
            y = (x * w).exp()
        assert not y.requires_grad
        assert live() <= before


def test_setitem_gradients_flow_to_values_and_base() -> None:
    w = mag.Tensor([1.0, 2.0], requires_grad=True)
    x = mag.Tensor.zeros(4)
    x[1:3] = w * 2.0
    assert x.requires_grad and x.grad_fn == "copy_slices"
    (x * x).backward(mag.Tensor.ones(4))
    assert w.grad.tolist() == [8.0, 16.0]


def test_setitem_overwrites_cut_the_old_values_gradient() -> None:
    w = mag.Tensor([1.0, 2.0], requires_grad=True)
    y = w.unsqueeze(0).expand(3, 2) * 1.0
    y[[0, 2], 1] = mag.Tensor([5.0, 6.0])
    y.backward(mag.Tensor.ones(3, 2))
    assert w.grad.tolist() == [3.0, 1.0]


def test_inplace_on_view_of_leaf_raises() -> None:
    x = mag.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x[0] = 3.0


def test_every_float_op_has_a_gradient_or_says_it_has_none() -> None:
    nograd, float_mask = 1 << 1, sum(1 << d._id for d in (mag.float32, mag.float16, mag.bfloat16, mag.float64))
    missing = [
        r["name"]
        for r in mag._C.op_table()
        if r["dtypes"] & float_mask and not r["flags"] & nograd and not mag._C.op_has_grad(r["id"])
    ]
    assert missing == []


def test_training_step_matches_torch_for_an_mlp() -> None:
    import torch

    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    model = mag.nn.Sequential(mag.nn.Linear(4, 8), mag.nn.Tanh(), mag.nn.Linear(8, 3))
    model.load_state_dict({k: mag.Tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    target = np.array([0, 2, 1, 1, 0])
    loss = mag.nn.functional.cross_entropy(model(mag.Tensor(x)), mag.Tensor(target))
    ref_loss = torch.nn.functional.cross_entropy(ref(torch.tensor(x)), torch.tensor(target))
    loss.backward()
    ref_loss.backward()
    assert abs(loss.item() - ref_loss.item()) < 1e-6
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
