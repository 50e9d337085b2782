"""Unit tests of the model runtime's pieces that need no reference model: sampling, stop strings,
incremental decoding and the KV cache."""

from __future__ import annotations

import math
from collections import Counter

import pytest

pytest.importorskip("tokenizers")

import magnetron as mag  # noqa: E402
from magnetron.models.generate import IncrementalDecoder, StopStrings, common_prefix  # noqa: E402
from magnetron.models.kv_cache import KVCache  # noqa: E402
from magnetron.models.sampling import Sampler, SamplingParams, _draw  # noqa: E402


def logits_of(probs: list[float]) -> mag.Tensor:
    return mag.Tensor([math.log(p) if p > 0 else -math.inf for p in probs])


def draws(params: SamplingParams, logits: mag.Tensor, n: int, context: list[int] | None = None) -> Counter:
    sampler = Sampler(params)
    return Counter(sampler(logits, context or []) for _ in range(n))


# ---- sampling ----
def test_greedy_and_degenerate_filters_pick_the_argmax():
    x = mag.Tensor([0.1, 2.0, -1.0, 1.9])
    for params in (
        SamplingParams(temperature=0),
        SamplingParams(top_k=1, seed=0),
        SamplingParams(top_p=0.01, seed=0),
        SamplingParams(min_p=1.0, seed=0),
    ):
        assert set(draws(params, x, 20)) == {1}


def test_repetition_penalty_follows_hf():
    # positive logits of seen tokens are divided by the penalty, negative ones multiplied
    assert Sampler(SamplingParams(temperature=0, repetition_penalty=2.0))(mag.Tensor([2.0, 1.9, -1.0]), [0]) == 1
    assert Sampler(SamplingParams(temperature=0, repetition_penalty=2.0))(mag.Tensor([-0.5, -0.6]), [0, 0]) == 1
    x = mag.Tensor([2.0, 1.5])
    Sampler(SamplingParams(temperature=0, repetition_penalty=2.0))(x, [0])
    assert x.tolist() == [2.0, 1.5]  # the caller's logits are left alone


def test_top_p_top_k_min_p_keep_the_right_tokens():
    x = logits_of([0.5, 0.3, 0.15, 0.05])
    assert set(draws(SamplingParams(top_p=0.5, seed=1), x, 50)) == {0}
    assert set(draws(SamplingParams(top_p=0.6, seed=1), x, 200)) == {0, 1}
    assert set(draws(SamplingParams(top_k=3, seed=1), x, 400)) == {0, 1, 2}
    assert set(draws(SamplingParams(min_p=0.5, seed=1), x, 200)) == {0, 1}
    probs, ids = Sampler(SamplingParams(top_k=2)).distribution(x, [])
    assert ids.tolist() == [0, 1] and probs.tolist() == pytest.approx([0.625, 0.375])


def test_draws_follow_the_distribution():
    counts = draws(SamplingParams(seed=3), logits_of([0.5, 0.3, 0.2]), 3000)
    for token, p in enumerate([0.5, 0.3, 0.2]):
        assert abs(counts[token] / 3000 - p) < 0.035
    cold = draws(SamplingParams(temperature=0.25, seed=3), logits_of([0.5, 0.3, 0.2]), 500)
    assert cold[0] > 400  # p^4 renormalised: 0.5^4 / (0.5^4 + 0.3^4 + 0.2^4) = 0.87


def test_seed_makes_sampling_reproducible():
    x = mag.Tensor.normal(1000)
    a = [Sampler(SamplingParams(seed=9))(x, []) for _ in range(1)]
    s1, s2, s3 = Sampler(SamplingParams(seed=9)), Sampler(SamplingParams(seed=9)), Sampler(SamplingParams(seed=10))
    seq1 = [s1(x, []) for _ in range(30)]
    assert seq1 == [s2(x, []) for _ in range(30)] != [s3(x, []) for _ in range(30)]
    assert a[0] == seq1[0]


def test_draw_never_picks_zero_probability_tokens():
    probs = mag.Tensor([0.0, 0.25, 0.0, 0.75, 0.0])
    assert [_draw(probs, u) for u in (0.0, 0.2499, 0.25, 0.999999999, 1.0)] == [1, 1, 3, 3, 3]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(temperature=-1), "temperature"),
        (dict(top_k=-2), "top_k"),
        (dict(top_p=1.5), "top_p"),
        (dict(min_p=-0.1), "min_p"),
        (dict(repetition_penalty=0), "repetition_penalty"),
    ],
)
def test_bad_sampling_params_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SamplingParams(**kwargs)
    with pytest.raises(TypeError, match="seed"):
        SamplingParams(seed=1.5)  # type: ignore[arg-type]


# ---- stop strings ----
def split_all_ways(text: str):
    n = len(text)
    for i in range(n + 1):
        for j in range(i, n + 1):
            yield [text[:i], text[i:j], text[j:]]


@pytest.mark.parametrize(
    ("text", "stops", "want"),
    [
        ("Hello </s> world", ["</s>"], "Hello "),
        ("abcabd", ["abd", "x"], "abc"),
        ("no stop here <", ["</s>"], "no stop here <"),
        ("aaab", ["aab"], "a"),
        ("two STOP stops </s>", ["</s>", "STOP"], "two "),
    ],
)
def test_stop_strings_cut_at_the_first_stop_however_text_is_split(text, stops, want):
    for pieces in split_all_ways(text):
        s = StopStrings(stops)
        out = ""
        for p in pieces:
            if not s.stopped:
                out += s.feed(p)
        if not s.stopped:
            out += s.flush()
        assert out == want, pieces


# ---- incremental decoding ----
class ByteTokenizer:
    """One token per UTF-8 byte; decoding shows incomplete characters as U+FFFD, like HF's."""

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return bytes(ids).decode("utf-8", errors="replace")


def test_incremental_decoder_holds_back_partial_characters():
    text = "añb€c🤖 d"
    decoder = IncrementalDecoder(ByteTokenizer())  # type: ignore[arg-type]
    pieces = [decoder.step(b) for b in text.encode()]
    assert "".join(pieces) + decoder.flush() == text
    assert not any("\ufffd" in p for p in pieces)
    assert pieces[-6:-2] == ["", "", "", "🤖"]
    cut = IncrementalDecoder(ByteTokenizer())  # type: ignore[arg-type]
    assert [cut.step(b) for b in "🤖".encode()[:2]] == ["", ""]
    assert cut.flush() == "\ufffd"  # a character cut off by the end of generation


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([1, 2], [1, 2]) == 2


# ---- KV cache ----
def test_kv_cache_writes_in_place_and_grows_keeping_rows():
    cache = KVCache(n_layers=2, batch=1, n_kv_heads=2, head_dim=3, capacity=2, max_capacity=8, dtype=mag.float32)
    k = mag.Tensor.normal(1, 2, 2, 3)
    kv, vv = cache.update(1, mag.Tensor([0, 1], dtype=mag.int64), k, k * 2)
    assert kv.shape == (1, 2, 2, 3) and kv.tolist() == k.tolist() and vv.tolist() == (k * 2).tolist()
    assert kv is cache.k[1] and vv is cache.v[1]  # the buffers themselves, written in place
    cache.length = 2
    cache.reserve(3)
    assert cache.capacity == 4  # doubled
    assert cache.k[1][:, :, :2].tolist() == k.tolist() and cache.v[1][:, :, :2].tolist() == (k * 2).tolist()
    k2 = mag.Tensor.normal(1, 2, 1, 3)
    kv, _ = cache.update(1, mag.Tensor([2], dtype=mag.int64), k2, k2)
    assert kv.shape == (1, 2, 4, 3) and kv[:, :, 2:3].tolist() == k2.tolist()
    assert kv[:, :, :2].tolist() == k.tolist()
    k3 = mag.Tensor.normal(1, 1, 2, 3).transpose(1, 2)  # (1, 2, 1, 3): (B, T, H, D) viewed per head
    kv, vv = cache.update(1, 3, k3, k3 * 2)  # a host-known first position: a slice copy
    assert kv[:, :, 3:4].tolist() == k3.tolist() and vv[:, :, 3:4].tolist() == (k3 * 2).tolist()
    assert kv[:, :, 2:3].tolist() == k2.tolist() and kv[:, :, :2].tolist() == k.tolist()
    cache.reserve(7)
    assert cache.capacity == 8  # capped at the context length
    cache.truncate(1)
    assert cache.length == 1
    with pytest.raises(ValueError, match="context length 8"):
        cache.reserve(9)


def test_nucleus_candidates_cover_top_p_without_a_full_sort():
    from magnetron.models.sampling import _nucleus_candidates

    x = mag.Tensor.normal(20000) * 0.5  # flat: the 0.99 nucleus needs more than the first 1024
    for top_p in (0.3, 0.9, 0.99):
        probs, ids = _nucleus_candidates(x, top_p)
        full = sorted(x.softmax(0).tolist(), reverse=True)
        n = probs.shape[0]
        assert probs.tolist() == pytest.approx(full[:n], rel=1e-5)
        assert sum(full[:n]) >= top_p - 1e-5 and (n == 20000 or n == 1024 or n == 8192)
