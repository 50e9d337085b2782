"""Logits, KV cache and greedy decoding against Hugging Face transformers on reference checkpoints."""

from __future__ import annotations

import magnetron as mag
import numpy as np
import pytest
import reference
import torch
from magnetron import models
from magnetron.models import SamplingParams

ARCHS = ["gpt2", "qwen3", "qwen3_bias", "qwen2", "llama"]
F32_TOL = 1e-4
BF16_TOL = 0.2
MARGIN = 1e-3  # greedy tokens must agree where HF's top-1/top-2 logit margin exceeds this


def random_ids(vocab: int, shape: tuple[int, ...], seed: int = 0) -> list:
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed)).tolist()


def hf_logits(ref: torch.nn.Module, ids: list) -> np.ndarray:
    with torch.no_grad():
        return ref(torch.tensor(ids)).logits.float().numpy()


@pytest.mark.parametrize("name", ARCHS)
def test_f32_logits_match_transformers(checkpoint, name):
    folder = checkpoint(name)
    model, ref = models.load(folder), reference.load_hf(folder)
    ids = random_ids(model.config.vocab_size, (2, 21))
    got, want = np.asarray(model(ids)), hf_logits(ref, ids)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=F32_TOL)
    np.testing.assert_allclose(np.asarray(model(ids[1])), want[1], rtol=0, atol=F32_TOL)  # 1-D input: (T, V)


@pytest.mark.parametrize("name", ARCHS)
def test_kv_cache_steps_equal_full_recompute(checkpoint, name):
    model = models.load(checkpoint(name))
    net = model.net
    ids = random_ids(model.config.vocab_size, (30,), seed=1)
    with mag.no_grad():
        full = np.asarray(net(mag.Tensor([ids]))[0])  # (T, V)
        cache = net.new_cache(4)  # small, so it has to grow
        steps = [np.asarray(net(mag.Tensor([ids[:7]]), cache)[0])]  # batched prefill
        for t in range(7, 22):
            steps.append(np.asarray(net(mag.Tensor([[ids[t]]]), cache)[0]))
        cache.truncate(18)  # roll back, then a multi-token chunk after a cached prefix (offset causal mask)
        steps.append(np.asarray(net(mag.Tensor([ids[18:30]]), cache)[0]))
    got = np.concatenate([steps[0], *steps[1:-1], steps[-1]])
    want = np.concatenate([full[:22], full[18:30]])
    np.testing.assert_allclose(got, want, rtol=0, atol=F32_TOL)
    assert cache.length == 30 and cache.capacity >= 30


@pytest.mark.parametrize("name", ["gpt2", "qwen3"])
def test_replayed_decode_graph_equals_eager_steps(checkpoint, name):
    """The decode loop's captured one-token forward, replayed at later positions (and captured again
    when the cache grows new buffers), gives exactly the eager forward's logits."""
    from magnetron.models.generate import DecodeGraph

    net = models.load(checkpoint(name)).net
    ids = random_ids(net.config.vocab_size, (14,), seed=2)
    with mag.no_grad():
        eager = net.new_cache(16)
        want = [np.asarray(net(mag.Tensor([ids[:3]]), eager)[0, -1])]
        want += [np.asarray(net(mag.Tensor([[t]]), eager)[0, 0]) for t in ids[3:]]
        cache = net.new_cache(5)  # grows (new buffers) at position 5 and 10
        got = [np.asarray(net(mag.Tensor([ids[:3]]), cache)[0, -1])]
        step = DecodeGraph(net, cache)
        got += [np.array(step(t)) for t in ids[3:]]  # copies: every replay rewrites the same logits
    assert step.graph.captured and cache.length == 14
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"position {i + 2}")


@pytest.mark.parametrize("name", ARCHS)
def test_greedy_continuation_matches_transformers_generate(checkpoint, name):
    folder = checkpoint(name)
    model, ref = models.load(folder), reference.load_hf(folder)
    prompt = random_ids(model.config.vocab_size, (9,), seed=2)
    n_new = 24
    with torch.no_grad():
        out = ref.generate(
            torch.tensor([prompt]), max_new_tokens=n_new, do_sample=False, eos_token_id=None, pad_token_id=0
        )
    want = out[0, len(prompt) :].tolist()
    model.eos_token_ids = []
    got = list(model.generate_ids(prompt, n_new, SamplingParams(temperature=0)))
    logits = hf_logits(ref, [prompt + want])[0, len(prompt) - 1 :]  # HF's logits behind each chosen token
    top2 = np.sort(logits, axis=-1)[:, -2:]
    compared = 0
    for i, (g, w) in enumerate(zip(got, want)):
        if top2[i, 1] - top2[i, 0] < MARGIN:
            break  # a near tie: float rounding may legitimately pick either
        assert g == w, f"token {i}: {g} != {w} (HF margin {top2[i, 1] - top2[i, 0]:.4f}); got {got}, want {want}"
        compared += 1
    assert compared >= 8, f"only {compared} tokens had a safe margin"
    assert len(set(want)) > 3, "degenerate reference: the perturbation should avoid repeating one token"


@pytest.mark.parametrize("name", ["gpt2", "qwen3", "llama"])
def test_bf16_logits_match_transformers_bf16(checkpoint, name):
    folder = checkpoint(name, torch.bfloat16)
    model, ref = models.load(folder), reference.load_hf(folder, torch.bfloat16)
    assert model.dtype == mag.bfloat16
    ids = random_ids(model.config.vocab_size, (1, 24), seed=3)
    got, want = np.asarray(model(ids)), hf_logits(ref, ids)
    assert np.abs(got - want).max() < BF16_TOL


def test_f32_checkpoint_cast_to_bf16_on_load(checkpoint):
    folder = checkpoint("qwen3_bias")
    model, ref = models.load(folder, dtype="bfloat16"), reference.load_hf(folder, torch.bfloat16)
    assert model.dtype == mag.bfloat16
    ids = random_ids(model.config.vocab_size, (1, 16), seed=4)
    assert np.abs(np.asarray(model(ids)) - hf_logits(ref, ids)).max() < BF16_TOL


@pytest.mark.models_big
@pytest.mark.parametrize(("name", "dtype"), [("gpt2_124m", torch.float32), ("qwen3_0.6b", torch.bfloat16)])
def test_full_size_shapes_match_transformers(checkpoint, name, dtype):
    """Full-size shapes. 28 random layers amplify bfloat16 rounding: there transformers' own bf16
    logits differ from its f32 ones by ~0.25 (logit std 2.5), so the bf16 bound is 0.2 or 1.5x that."""
    folder = checkpoint(name, dtype)
    model = models.load(folder)
    ids = random_ids(model.config.vocab_size, (1, 64), seed=5)
    want = hf_logits(reference.load_hf(folder, dtype), ids)
    tol = F32_TOL
    if dtype == torch.bfloat16:
        tol = max(BF16_TOL, 1.5 * np.abs(want - hf_logits(reference.load_hf(folder, torch.float32), ids)).max())
    got = np.asarray(model(ids))
    assert np.abs(got - want).max() < tol
    with mag.no_grad():  # the cached path at full size: prefill then a few steps
        cache = model.net.new_cache(64)
        model.net(mag.Tensor([ids[0][:60]]), cache)
        for t in range(60, 64):
            step = np.asarray(model.net(mag.Tensor([[ids[0][t]]]), cache)[0, 0])
            assert np.abs(step - got[0, t]).max() < tol
