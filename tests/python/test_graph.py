"""mag.Graph: kernel launches recorded once and replayed on the same tensors (src/core/graph.c)."""

from __future__ import annotations

import threading

import magnetron as mag
import numpy as np
import pytest
from magnetron.nn import functional as F


def mlp(x: mag.Tensor, w1: mag.Tensor, w2: mag.Tensor) -> mag.Tensor:
    h = F.silu(x @ w1.T) * 0.5  # the intermediates are dropped by Python, kept by the graph
    return F.rms_norm(h @ w2.T + x, x.shape[-1])


def test_replay_recomputes_from_the_new_input_data() -> None:
    rng = np.random.default_rng(0)
    x = mag.Tensor(rng.standard_normal((3, 16), dtype=np.float32))
    w1, w2 = (mag.Tensor(rng.standard_normal(s, dtype=np.float32)) for s in ((32, 16), (16, 32)))
    g = mag.Graph()
    with mag.no_grad(), g.capture():
        y = mlp(x, w1, w2)
    assert g.captured and len(g) >= 5
    np.testing.assert_allclose(y.numpy(), mlp(x, w1, w2).numpy(), rtol=1e-6)
    for seed in (1, 2):
        x.copy_(mag.Tensor(np.random.default_rng(seed).standard_normal((3, 16), dtype=np.float32)))
        g.replay()
        np.testing.assert_allclose(y.numpy(), mlp(x, w1, w2).numpy(), rtol=1e-5, atol=1e-6)


def test_index_and_index_put_read_their_indices_at_replay() -> None:
    table = mag.Tensor(np.arange(20, dtype=np.float32).reshape(10, 2))
    ids = mag.Tensor([[1, 2]], dtype=mag.int64)
    buf = mag.Tensor.zeros(4, 2)
    pos = mag.Tensor([0], dtype=mag.int64)
    g = mag.Graph()
    with g.capture():
        rows = table[ids]  # (1, 2, 2)
        buf[pos] = rows[0, :1]
    for i, (a, b) in enumerate([(3, 4), (-1, 0), (5, 9)]):
        ids.copy_(mag.Tensor([[a, b]], dtype=mag.int64))
        pos.copy_(mag.Tensor([i + 1], dtype=mag.int64))
        g.replay()
        np.testing.assert_array_equal(rows.numpy(), table.numpy()[[[a, b]]])
        np.testing.assert_array_equal(buf.numpy()[i + 1], table.numpy()[a])


def test_a_cache_write_is_one_launch() -> None:
    # int64 positions and contiguous values of the indexed shape go to the kernel as they are: no copies
    cache, pos = mag.Tensor.zeros(1, 2, 8, 4), mag.Tensor([0], dtype=mag.int64)
    k = mag.Tensor.ones(1, 1, 2, 4).transpose(1, 2)  # (B, H, T=1, D): a view, contiguous all the same
    g = mag.Graph()
    with g.capture():
        cache[:, :, pos] = k
    assert [p.op for p in g.profile(replays=1)] == ["index_put"]
    for i in (3, -1):
        k.fill_(float(i)), pos.fill_(i)
        g.replay()
        assert (cache.numpy()[:, :, i] == i).all()


def test_replays_read_ahead_safely_beside_other_threads_and_resizes() -> None:
    # A replay hands the big inputs of the next parallel launch to an idle worker while serial
    # launches run (src/core/graph.c): parallel ops from another thread and thread-count changes
    # in between must still give the same results and never hang.
    rng = np.random.default_rng(0)
    w = mag.Tensor(rng.standard_normal((512, 1024), dtype=np.float32))  # 2 MiB: read ahead
    x = mag.Tensor(rng.standard_normal((1, 1024), dtype=np.float32))
    g = mag.Graph()
    with mag.no_grad(), g.capture():
        y = F.linear(x * 0.5 + 1.0, w) - 2.0  # serial, serial, a parallel GEMV, serial
    want = (x.numpy() * 0.5 + 1.0) @ w.numpy().T - 2.0
    a = mag.Tensor(rng.standard_normal((256, 256), dtype=np.float32))
    stop, errors = threading.Event(), []

    def other() -> None:
        try:
            while not stop.is_set():
                np.testing.assert_allclose((a @ a).numpy(), a.numpy() @ a.numpy(), rtol=1e-4, atol=1e-3)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = mag.context.num_threads
    t = threading.Thread(target=other)
    t.start()
    try:
        for i in range(200):
            if i % 50 == 49:
                mag.context.num_threads = 1 if mag.context.num_threads > 1 else 2
            g.replay()
            np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-3)
    finally:
        stop.set()
        t.join()
        mag.context.num_threads = threads
    assert not errors


def test_an_index_out_of_bounds_at_replay_is_an_index_error() -> None:
    table = mag.Tensor.ones(10, 2)
    ids = mag.Tensor([3], dtype=mag.int64)
    g = mag.Graph()
    with g.capture():
        table[ids]
    ids.copy_(mag.Tensor([10], dtype=mag.int64))
    with pytest.raises(IndexError, match="index: an index is out of bounds"):
        g.replay()
    ids.copy_(mag.Tensor([-11], dtype=mag.int64))
    with pytest.raises(IndexError):
        g.replay()


@pytest.mark.parametrize(
    "op",
    [
        lambda x: x.argmax(),
        lambda x: (x > 0).nonzero(),
        lambda x: x.logsumexp(0),
        lambda x: x.softmax(0).multinomial(1),
    ],
    ids=["argmax", "nonzero", "logsumexp", "multinomial"],
)
def test_ops_that_read_values_on_the_host_refuse_capture(op) -> None:
    x = mag.Tensor([0.5, -1.0, 2.0])
    g = mag.Graph()
    with pytest.raises(RuntimeError, match="cannot be captured in a graph"), g.capture():
        op(x)
    assert not g.captured
    with g.capture():  # the failed capture ended: this thread can capture again
        y = x * 2.0
    g.replay()
    np.testing.assert_array_equal(y.numpy(), [1.0, -2.0, 4.0])


def test_ops_that_autograd_records_refuse_capture() -> None:
    w = mag.Tensor([1.0, 2.0], requires_grad=True)
    g = mag.Graph()
    with pytest.raises(RuntimeError, match="autograd records"), g.capture():
        w * 3.0
    with mag.no_grad(), g.capture():
        y = w * 3.0
    g.replay()
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])


def test_misuse() -> None:
    g = mag.Graph()
    with pytest.raises(RuntimeError, match="nothing has been captured"):
        g.replay()
    outer, inner = mag.Graph(), mag.Graph()
    with outer.capture():
        with pytest.raises(RuntimeError, match="already capturing"), inner.capture():
            pass
    assert outer.captured and not inner.captured


def test_capture_is_per_thread() -> None:
    x = mag.Tensor([1.0, 2.0])
    g, seen = mag.Graph(), []
    with g.capture():
        y = x + 1.0
        t = threading.Thread(target=lambda: seen.append((x * 5.0).numpy()))  # not recorded
        t.start()
        t.join()
    n = len(g)
    x.copy_(mag.Tensor([10.0, 20.0]))
    g.replay()
    np.testing.assert_array_equal(y.numpy(), [11.0, 21.0])
    np.testing.assert_array_equal(seen[0], [5.0, 10.0])
    assert len(g) == n


def test_profile_names_every_launch_and_replays_it() -> None:
    rng = np.random.default_rng(0)
    x = mag.Tensor(rng.standard_normal((3, 16), dtype=np.float32))
    w1, w2 = (mag.Tensor(rng.standard_normal(s, dtype=np.float32)) for s in ((32, 16), (16, 32)))
    g = mag.Graph()
    with pytest.raises(RuntimeError, match="nothing has been captured"):
        g.profile()
    with mag.no_grad(), g.capture():
        y = mlp(x, w1, w2)
    prof = g.profile(replays=3)
    assert [p.index for p in prof] == list(range(len(g)))
    assert prof[0].op == "matmul" and prof[0].shape == (3, 32) and prof[0].dtype == "float32"
    assert prof[-1].op == "rms_norm" and prof[-1].shape == (3, 16)
    assert all(p.seconds > 0 for p in prof)
    x.copy_(mag.Tensor(np.ones((3, 16), dtype=np.float32)))
    g.profile(replays=1)  # a profile is a replay: y follows the new input
    np.testing.assert_allclose(y.numpy(), mlp(x, w1, w2).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="replays must be >= 1"):
        g.profile(replays=0)
