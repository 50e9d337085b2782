"""nn.functional.linear_concat (the fused op): the same bits as joining separate linear products,
against PyTorch for every engine dtype, GEMV (few rows) and GEMM (many rows) paths, x and weight
layouts, one and two threads, inside a captured graph, the autograd fallback, and the errors."""

from __future__ import annotations

import magnetron as mag
import pytest
import torch
from _struct_util import make, rand, threads, to_torch

F = mag.nn.functional
TOLERANCE = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3}  # relative to |x| @ |W|.T, as in test_matmul
SIZES = (48, 16, 80)  # rows of the three weights: q/k/v-like, none a multiple of the 64-column claim unit


def weights(k: int, dtype: str, gen: torch.Generator, sizes: tuple[int, ...] = SIZES) -> list[torch.Tensor]:
    return [rand((n, k), dtype, gen) for n in sizes]


def check(got: torch.Tensor, tx: torch.Tensor, tws: list[torch.Tensor], dtype: str) -> None:
    want = torch.cat([tx.double() @ w.double().T for w in tws], dim=-1)
    scale = torch.cat([tx.double().abs() @ w.double().abs().T for w in tws], dim=-1)
    assert got.shape == want.shape and got.dtype == getattr(torch, dtype)
    assert ((got.double() - want).abs() <= TOLERANCE[dtype] * scale + 1e-30).all()


def separate(x: mag.Tensor, ws: list[mag.Tensor]) -> torch.Tensor:
    """The composed result: one linear per weight, joined."""
    return to_torch(mag.Tensor.cat([F.linear(x, w) for w in ws], dim=-1))


@pytest.mark.parametrize("dtype", sorted(TOLERANCE))
@pytest.mark.parametrize("lead", [(), (1,), (3,), (2, 3), (40,)], ids=str)
@pytest.mark.parametrize("n_threads", [1, 2])
def test_matches_torch_and_the_composed_bits(dtype: str, lead: tuple[int, ...], n_threads: int) -> None:
    gen = torch.Generator().manual_seed(len(lead) + sum(lead))
    tx, tws = rand((*lead, 512), dtype, gen), weights(512, dtype, gen)  # enough work for two threads
    x, ws = mag.Tensor(tx), [mag.Tensor(w) for w in tws]
    with threads(n_threads):
        got = to_torch(F.linear_concat(x, ws))
        assert torch.equal(_bits(got, dtype), _bits(separate(x, ws), dtype))
    check(got, tx, tws, dtype)


def _bits(t: torch.Tensor, dtype: str) -> torch.Tensor:
    return t.view(torch.int16) if dtype != "float32" else t


@pytest.mark.parametrize("x_layout", ["transposed", "strided", "negative", "broadcast"])
@pytest.mark.parametrize("w_layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("rows", [1, 24])
def test_any_layout_of_x_and_the_weights(x_layout: str, w_layout: str, rows: int) -> None:
    gen = torch.Generator().manual_seed(rows)
    x, tx = make(rand((rows, 512), "float32", gen), x_layout)
    pairs = [make(w, w_layout) for w in weights(512, "float32", gen)]
    with threads(2):
        got = to_torch(F.linear_concat(x, [w for w, _ in pairs]))  # transposed weights: x @ W, rows split
    check(got, tx, [tw for _, tw in pairs], "float32")


def test_empty_depth_rows_and_weights() -> None:
    x = mag.Tensor.ones(3, 0)
    assert torch.equal(to_torch(F.linear_concat(x, [mag.Tensor.ones(4, 0), mag.Tensor.ones(2, 0)])), torch.zeros(3, 6))
    x = mag.Tensor.ones(0, 5)
    assert F.linear_concat(x, [mag.Tensor.ones(4, 5)]).shape == (0, 4)
    got = F.linear_concat(mag.Tensor.ones(2, 5), [mag.Tensor.ones(0, 5), mag.Tensor.ones(3, 5)])
    assert torch.equal(to_torch(got), torch.full((2, 3), 5.0))


def test_a_captured_graph_replays_with_new_data() -> None:
    gen = torch.Generator().manual_seed(3)
    x, ws = mag.Tensor(rand((1, 512), "bfloat16", gen)), [mag.Tensor(w) for w in weights(512, "bfloat16", gen)]
    g = mag.Graph()
    with threads(2), mag.no_grad(), g.capture():
        y = F.linear_concat(x, ws)
    x.copy_(mag.Tensor(rand((1, 512), "bfloat16", gen)))
    with threads(2):
        g.replay()
    assert torch.equal(to_torch(y).view(torch.int16), separate(x, ws).view(torch.int16))


def test_gradients_take_the_composed_path() -> None:
    gen = torch.Generator().manual_seed(4)
    tx, tws = rand((3, 32), "float32", gen), weights(32, "float32", gen, (8, 5))
    x = mag.Tensor(tx, requires_grad=True)
    ws = [mag.Tensor(w, requires_grad=True) for w in tws]
    F.linear_concat(x, ws).sum().backward()
    rx = tx.clone().requires_grad_()
    rws = [w.clone().requires_grad_() for w in tws]
    torch.cat([torch.nn.functional.linear(rx, w) for w in rws], dim=-1).sum().backward()
    torch.testing.assert_close(to_torch(x.grad), rx.grad)
    for w, rw in zip(ws, rws):
        torch.testing.assert_close(to_torch(w.grad), rw.grad)


def test_errors_name_the_op_shapes_and_dtypes() -> None:
    x = mag.Tensor.ones(2, 8)
    with pytest.raises(ValueError, match=r"linear_concat: weight 1 has shape \(3, 7\), expected \(N, 8\)"):
        F.linear_concat(x, [mag.Tensor.ones(4, 8), mag.Tensor.ones(3, 7)])
    with pytest.raises(ValueError, match="linear_concat: no weights"):
        F.linear_concat(x, [])
    mixed = F.linear_concat(x, [mag.Tensor.ones(4, 8, dtype=mag.bfloat16)])  # composed: promoted like linear
    assert mixed.dtype == mag.float32 and torch.equal(to_torch(mixed), torch.full((2, 4), 8.0))
    op = mag._C.op_table()
    op_id = next(r["id"] for r in op if r["name"] == "linear_concat")
    with pytest.raises(TypeError, match="linear_concat: weight 0 is bfloat16 but x is float32"):
        mag._C._op(op_id, [x, mag.Tensor.ones(4, 8, dtype=mag.bfloat16)], [])
    with pytest.raises(TypeError, match="linear_concat: unsupported dtype int32"):
        mag._C._op(op_id, [x.cast(mag.int32), mag.Tensor.ones(4, 8, dtype=mag.int32)], [])
    with pytest.raises(RuntimeError, match="linear_concat: the fused kernel is forward-only"):
        mag._C._op(op_id, [mag.Tensor.ones(2, 8, requires_grad=True), mag.Tensor.ones(4, 8)], [])
