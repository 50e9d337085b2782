"""nn: modules, state_dict semantics (PyTorch key names), layers and losses against torch."""

from __future__ import annotations

import magnetron as mag
import numpy as np
import pytest
import torch
from magnetron import nn
from magnetron.nn import functional as F


def to_mag(t: torch.Tensor) -> mag.Tensor:
    return mag.Tensor(t.detach().numpy())


def to_np(t: mag.Tensor) -> np.ndarray:
    return t.detach().numpy()


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.blocks = nn.ModuleList([nn.Linear(6, 6), nn.Linear(6, 6, bias=False)])
        self.norm = nn.LayerNorm(6)
        self.head = nn.Sequential(nn.RMSNorm(6), nn.Linear(6, 3))
        self.register_buffer("scale", mag.Tensor([2.0]))
        self.register_buffer("cache", mag.Tensor([0.0]), persistent=False)


class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(10, 6)
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(6, 6), torch.nn.Linear(6, 6, bias=False)])
        self.norm = torch.nn.LayerNorm(6)
        self.head = torch.nn.Sequential(torch.nn.RMSNorm(6, eps=1e-6), torch.nn.Linear(6, 3))
        self.register_buffer("scale", torch.tensor([2.0]))
        self.register_buffer("cache", torch.tensor([0.0]), persistent=False)


def test_state_dict_keys_match_pytorch() -> None:
    assert list(Net().state_dict()) == list(TorchNet().state_dict())
    assert [n for n, _ in Net().named_parameters()] == [n for n, _ in TorchNet().named_parameters()]


def test_torch_state_dict_loads_and_gives_the_same_outputs() -> None:
    torch.manual_seed(0)
    ref, net = TorchNet(), Net()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    result = net.load_state_dict({k: to_mag(v) for k, v in ref.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    ids = torch.tensor([[1, 2, 3], [4, 5, 9]])

    def run(m, ids):  # the same forward code drives both libraries
        h = m.embed(ids)
        for b in m.blocks:
            h = h + b(h).relu()
        return m.head(m.norm(h)) * m.scale

    np.testing.assert_allclose(
        to_np(run(net, mag.Tensor(ids.numpy()))), run(ref, ids).detach().numpy(), rtol=1e-5, atol=1e-5
    )


def test_load_state_dict_strict_and_errors_name_the_key() -> None:
    net = Net()
    sd = net.state_dict()
    del sd["norm.bias"]
    sd["extra"] = mag.Tensor([1.0])
    with pytest.raises(RuntimeError, match="norm.bias"):
        net.load_state_dict(sd)
    res = net.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["norm.bias"] and res.unexpected_keys == ["extra"]
    bad = net.state_dict()
    bad["head.1.weight"] = mag.Tensor.zeros(4, 6)
    with pytest.raises(RuntimeError, match=r"head\.1\.weight.*\(4, 6\)"):
        net.load_state_dict(bad)
    bad = net.state_dict()
    bad["head.1.weight"] = mag.Tensor.zeros(3, 6, dtype=mag.int32)
    with pytest.raises(RuntimeError, match=r"head\.1\.weight.*int32"):
        net.load_state_dict(bad)


def test_train_eval_apply_and_zero_grad() -> None:
    net = Net()
    assert net.training and all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and "Linear" in seen
    y = net.head(mag.Tensor.ones(2, 6)).sum()
    y.backward()
    assert net.head[1].weight.grad is not None
    net.zero_grad()
    assert net.head[1].weight.grad is None


def test_default_initialisation_bounds_like_pytorch() -> None:
    lin = nn.Linear(100, 50)
    bound = 1 / 10
    assert float(lin.weight.abs().max().item()) <= bound and float(lin.bias.abs().max().item()) <= bound
    assert abs(float(lin.weight.std().item()) - bound / 3**0.5) < 0.01  # uniform(-b, b) has std b / sqrt(3)
    emb = nn.Embedding(1000, 10)
    assert abs(float(emb.weight.std().item()) - 1.0) < 0.05


def test_dropout_scales_in_training_and_is_identity_in_eval() -> None:
    mag.context.manual_seed(0)
    d = nn.Dropout(0.25)
    y = d(mag.Tensor.ones(10000))
    kept = (y != 0).sum().item() / 10000
    assert abs(kept - 0.75) < 0.02 and abs(y.max().item() - 1 / 0.75) < 1e-6
    d.eval()
    assert d(mag.Tensor.ones(4)).tolist() == [1.0] * 4


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch(reduction: str) -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 5)).astype(np.float32)
    target = np.array([0, 4, -100, 2])
    probs = rng.dirichlet(np.ones(5), size=4).astype(np.float32)
    pairs = [
        (
            F.cross_entropy(mag.Tensor(logits), mag.Tensor(target), reduction=reduction),
            torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(target), reduction=reduction),
        ),
        (
            F.cross_entropy(mag.Tensor(logits), mag.Tensor(probs), reduction=reduction),
            torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(probs), reduction=reduction),
        ),
        (
            F.mse_loss(mag.Tensor(logits), mag.Tensor(probs), reduction=reduction),
            torch.nn.functional.mse_loss(torch.tensor(logits), torch.tensor(probs), reduction=reduction),
        ),
        (
            F.binary_cross_entropy(mag.Tensor(probs), mag.Tensor(probs[::-1].copy()), reduction=reduction),
            torch.nn.functional.binary_cross_entropy(
                torch.tensor(probs), torch.tensor(probs[::-1].copy()), reduction=reduction
            ),
        ),
        (
            F.binary_cross_entropy_with_logits(mag.Tensor(logits), mag.Tensor(probs), reduction=reduction),
            torch.nn.functional.binary_cross_entropy_with_logits(
                torch.tensor(logits), torch.tensor(probs), reduction=reduction
            ),
        ),
    ]
    for ours, ref in pairs:
        np.testing.assert_allclose(to_np(ours), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_cross_entropy_gradients_match_torch() -> None:
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(3, 4, 2)).astype(np.float32)
    target = np.array([[0, 3], [-100, 1], [2, 2]])
    x = mag.Tensor(logits, requires_grad=True)
    t = torch.tensor(logits, requires_grad=True)
    F.cross_entropy(x, mag.Tensor(target), label_smoothing=0.1).backward()
    torch.nn.functional.cross_entropy(t, torch.tensor(target), label_smoothing=0.1).backward()
    np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_activation_modules(approximate: str) -> None:
    x = np.linspace(-4, 4, 17).astype(np.float32)
    pairs = [
        (nn.GELU(approximate), torch.nn.GELU(approximate)),
        (nn.SiLU(), torch.nn.SiLU()),
        (nn.HardSigmoid(), torch.nn.Hardsigmoid()),
        (nn.Sigmoid(), torch.nn.Sigmoid()),
        (nn.Tanh(), torch.nn.Tanh()),
        (nn.ReLU(), torch.nn.ReLU()),
        (nn.Softmax(-1), torch.nn.Softmax(-1)),
    ]
    for ours, ref in pairs:
        np.testing.assert_allclose(to_np(ours(mag.Tensor(x))), ref(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
def test_scaled_dot_product_attention_matches_torch(heads: tuple[int, int], is_causal: bool) -> None:
    hq, hk = heads
    rng = np.random.default_rng(0)
    q = rng.normal(size=(2, hq, 5, 8)).astype(np.float32)
    k = rng.normal(size=(2, hk, 7, 8)).astype(np.float32)
    v = rng.normal(size=(2, hk, 7, 8)).astype(np.float32)
    ours = F.scaled_dot_product_attention(mag.Tensor(q), mag.Tensor(k), mag.Tensor(v), is_causal=is_causal)
    ref = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=is_causal, enable_gqa=hq != hk
    )
    np.testing.assert_allclose(to_np(ours), ref.numpy(), rtol=1e-4, atol=1e-5)


def test_rope_rotate_half_and_interleaved() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 8)).astype(np.float32)
    cos, sin = F.rope_frequencies(5, 8, theta=10000.0)
    pos = np.arange(5)[:, None] * 10000.0 ** (-np.arange(0, 8, 2) / 8)
    c, s = np.cos(pos), np.sin(pos)
    x1, x2 = x[..., :4], x[..., 4:]
    expect = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    np.testing.assert_allclose(to_np(F.rope(mag.Tensor(x), cos, sin)), expect, rtol=1e-5, atol=1e-5)
    e, o = x[..., 0::2], x[..., 1::2]
    inter = np.stack([e * c - o * s, e * s + o * c], axis=-1).reshape(x.shape)
    np.testing.assert_allclose(to_np(F.rope(mag.Tensor(x), cos, sin, interleaved=True)), inter, rtol=1e-5, atol=1e-5)


def test_load_state_dict_from_a_snapshot_adopts_the_mapped_tensors(tmp_path) -> None:
    net = Net()
    path = tmp_path / "net.mag"
    mag.save(path, net)
    snap = mag.load(path)
    fresh = Net()
    fresh.load_state_dict(snap)
    for name, t in fresh.state_dict().items():
        assert t.data_ptr == snap[name].data_ptr, f"{name} was copied"
    x = mag.Tensor([[1, 2]])
    np.testing.assert_array_equal(to_np(fresh.head(fresh.embed(x))), to_np(net.head(net.embed(x))))
