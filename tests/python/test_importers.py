"""Importers and ``magnetron convert``/``verify``: files written by the reference writers
(the safetensors package, torch.save, the gguf package's GGUFWriter) come out identical."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import magnetron as mag
import numpy as np
import pytest
from magnetron import cli
from magnetron.io.convert import convert

torch = pytest.importorskip("torch")


def as_torch(t: mag.Tensor) -> torch.Tensor:
    return torch.from_dlpack(t.clone())


def check_same(snap: mag.Snapshot, ref: dict[str, torch.Tensor]) -> None:
    assert set(snap) == set(ref)
    for name, r in ref.items():
        got = as_torch(snap[name])
        assert got.dtype == r.dtype and got.shape == r.shape, name
        assert torch.equal(got, r), name


def tensors_every_dtype() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(3, 5, generator=g) * 50
    out = {f"f.{d}": base.to(d) for d in (torch.float32, torch.float16, torch.bfloat16, torch.float64)}
    for d in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32, torch.uint64):
        out[f"i.{d}"] = base.abs().to(torch.int64).to(d)
    out["bool"] = base > 0
    out["scalar"] = torch.tensor(2.5)
    out["empty"] = torch.zeros(0, 4)
    out["rank4"] = torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 4)
    return out


# ---- safetensors ----
def hf_folder(folder: Path) -> None:
    (folder / "config.json").write_text('{"model_type": "qwen3", "hidden_size": 8}')
    (folder / "generation_config.json").write_text('{"temperature": 0.7}')
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "BPE"}}')
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": None, "chat_template": "{{ messages }}"}))


def test_safetensors_single_file_every_dtype(tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.torch")
    ref = tensors_every_dtype()
    hf_folder(tmp_path)
    st.save_file(ref, tmp_path / "model.safetensors", metadata={"format": "pt"})
    convert(tmp_path, tmp_path / "out.mag")
    snap = mag.load(tmp_path / "out.mag", verify=True)
    check_same(snap, ref)
    meta = snap.metadata
    assert meta["general.architecture"] == "qwen3"
    assert json.loads(meta["model.config"])["hidden_size"] == 8
    assert meta["model.generation_config"] == '{"temperature": 0.7}'
    assert meta["tokenizer.json"] == (tmp_path / "tokenizer.json").read_text()
    assert meta["tokenizer.chat_template"] == "{{ messages }}"
    assert meta["safetensors.format"] == "pt"
    assert meta["provenance.source_format"] == "safetensors" and meta["provenance.converter"].startswith("magnetron")
    # the file itself, not the folder, also finds the folder's metadata
    convert(tmp_path / "model.safetensors", tmp_path / "again.mag")
    assert mag.load(tmp_path / "again.mag").metadata["general.architecture"] == "qwen3"


def test_safetensors_sharded_and_chat_template_file(tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.torch")
    ref = tensors_every_dtype()
    names = list(ref)
    shards = {"model-00001-of-00002.safetensors": names[:7], "model-00002-of-00002.safetensors": names[7:]}
    weight_map = {}
    for file, part in shards.items():
        st.save_file({n: ref[n] for n in part}, tmp_path / file)
        weight_map |= {n: file for n in part}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (tmp_path / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    convert(tmp_path, tmp_path / "out.mag")
    snap = mag.load(tmp_path / "out.mag")
    check_same(snap, ref)
    assert snap.metadata["tokenizer.chat_template"].startswith("{% for m")
    weight_map["missing.weight"] = "model-00001-of-00002.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(mag.FormatError, match="missing.weight"):
        convert(tmp_path, tmp_path / "bad.mag")


def test_safetensors_dtype_cast(tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.torch")
    ref = {"w": torch.randn(4, 6, dtype=torch.float32), "ids": torch.arange(5)}
    st.save_file(ref, tmp_path / "m.safetensors")
    for name, td in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        convert(tmp_path / "m.safetensors", tmp_path / f"{name}.mag", dtype=name)
        snap = mag.load(tmp_path / f"{name}.mag")
        assert torch.equal(as_torch(snap["w"]), ref["w"].to(td))  # round to nearest even, like torch
        assert torch.equal(as_torch(snap["ids"]), ref["ids"])  # integers are never cast
        assert snap.metadata["provenance.dtype"] == name
    with pytest.raises(ValueError, match="dtype must be one of"):
        convert(tmp_path / "m.safetensors", tmp_path / "x.mag", dtype="int8")


def raw_safetensors(path: Path, header: bytes, data: bytes = b"") -> None:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


@pytest.mark.parametrize(
    "header, data, match",
    [
        (b"{not json", b"", "not valid JSON"),
        (b"[]", b"", "not a JSON object"),
        (b'{"a": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}', b"\0", "F8_E4M3"),
        (b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', b"\0" * 4, "outside"),
        (b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}', b"\0" * 8, "needs 12"),
        (b'{"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}', b"", "invalid shape"),
        (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}', b"\0" * 4, "outside"),
    ],
)
def test_safetensors_corrupt(tmp_path: Path, header: bytes, data: bytes, match: str) -> None:
    raw_safetensors(tmp_path / "bad.safetensors", header, data)
    with pytest.raises(mag.FormatError, match=match):
        convert(tmp_path / "bad.safetensors", tmp_path / "o.mag")
    (tmp_path / "short.safetensors").write_bytes(struct.pack("<Q", 1 << 40))
    with pytest.raises(mag.FormatError, match="header length"):
        convert(tmp_path / "short.safetensors", tmp_path / "o.mag")
    assert not (tmp_path / "o.mag").exists()


def test_safetensors_unaligned_data_is_copied(tmp_path: Path) -> None:
    # a hand-made file whose data starts at an odd offset: float32 must not be read misaligned
    header = b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [1, 9]}}'
    raw_safetensors(tmp_path / "odd.safetensors", header, b"\0" + struct.pack("<2f", 1.5, -2.0))
    convert(tmp_path / "odd.safetensors", tmp_path / "o.mag")
    assert mag.load(tmp_path / "o.mag")["a"].tolist() == [1.5, -2.0]


# ---- PyTorch checkpoints ----
def test_torch_save_checkpoint(tmp_path: Path) -> None:
    ref = tensors_every_dtype()
    ref["t"] = torch.arange(12.0).reshape(3, 4).t()  # non-contiguous
    torch.save({"model": ref, "step": 3, "note": "x"}, tmp_path / "ckpt.pt")
    convert(tmp_path / "ckpt.pt", tmp_path / "out.mag")
    snap = mag.load(tmp_path / "out.mag")
    check_same(snap, {f"model.{k}": v.contiguous() for k, v in ref.items()})
    assert snap.metadata["provenance.source_format"] == "pytorch"


def test_torch_legacy_format_and_folder(tmp_path: Path) -> None:
    ref = {"w": torch.randn(2, 3), "b": torch.zeros(3, dtype=torch.bfloat16)}
    torch.save(ref, tmp_path / "pytorch_model.bin", _use_new_zipfile_serialization=False)
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    convert(tmp_path, tmp_path / "out.mag", dtype="float32")
    snap = mag.load(tmp_path / "out.mag")
    check_same(snap, {"w": ref["w"], "b": ref["b"].float()})
    assert snap.metadata["general.architecture"] == "gpt2"


def test_torch_refuses_pickled_code(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self) -> tuple:
            return (print, ("pwned",))

    torch.save({"x": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(mag.FormatError, match="not a loadable PyTorch checkpoint"):
        convert(tmp_path / "evil.pt", tmp_path / "o.mag")


# ---- GGUF ----
N_HEAD, N_KV, HEAD_DIM, DIM = 4, 2, 8, 64


def llama_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """What convert_hf_to_gguf.py does to Llama Q/K weights."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gpt2_tokenizer() -> tuple[object, dict]:
    tk = pytest.importorskip("tokenizers")
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>"],
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    corpus = ["hello world, the quick brown fox jumps over the lazy dog 12345"] * 20 + ["über naïve café"] * 5
    tok.train_from_iterator(corpus, trainer)
    return tok, json.loads(tok.to_str())


def write_gguf(path: Path, arch: str = "llama", tokenizer: str = "gpt2") -> dict[str, np.ndarray]:
    gguf = pytest.importorskip("gguf")
    Q = gguf.GGMLQuantizationType
    rng = np.random.default_rng(0)
    hf = {
        "q": rng.standard_normal((N_HEAD * HEAD_DIM, DIM)).astype(np.float32),
        "k": rng.standard_normal((N_KV * HEAD_DIM, DIM)).astype(np.float32),
        "v": rng.standard_normal((N_KV * HEAD_DIM, DIM)).astype(np.float32),
        "q8": rng.standard_normal((16, DIM)).astype(np.float32),
        "emb": rng.standard_normal((10, DIM)).astype(np.float32),
        "norm": rng.standard_normal(DIM).astype(np.float16),
        "out": rng.standard_normal((12, DIM)).astype(np.float32),
        "ids": np.arange(7, dtype=np.int32),
    }
    w = gguf.GGUFWriter(str(path), arch)
    w.add_uint32(f"{arch}.attention.head_count", N_HEAD)
    w.add_uint32(f"{arch}.attention.head_count_kv", N_KV)
    w.add_uint32(f"{arch}.context_length", 128)
    w.add_array("test.nested", [[1, 2], [3]])
    w.add_chat_template("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}")
    if tokenizer == "gpt2":
        _, tj = gpt2_tokenizer()
        vocab = sorted(tj["model"]["vocab"].items(), key=lambda kv: kv[1])
        tokens = [t for t, _ in vocab]
        special = {a["content"] for a in tj["added_tokens"]}
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("gpt-2")
        w.add_token_list(tokens)
        w.add_token_types([3 if t in special else 1 for t in tokens])
        w.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in tj["model"]["merges"]])
        w.add_bos_token_id(tokens.index("<|endoftext|>"))
        w.add_eos_token_id(tokens.index("<|endoftext|>"))
        w.add_add_bos_token(False)
    else:
        add_spm_tokenizer(w)
    w.add_tensor("blk.0.attn_q.weight", llama_permute(hf["q"], N_HEAD))  # F32
    w.add_tensor("blk.0.attn_k.weight", gguf.quants.quantize(llama_permute(hf["k"], N_KV), Q.Q4_0), raw_dtype=Q.Q4_0)
    w.add_tensor("blk.0.attn_v.weight", gguf.quants.quantize(hf["v"], Q.Q4_1), raw_dtype=Q.Q4_1)
    w.add_tensor("blk.0.ffn_up.weight", gguf.quants.quantize(hf["q8"], Q.Q8_0), raw_dtype=Q.Q8_0)
    w.add_tensor("token_embd.weight", hf["emb"].astype(np.float16))
    w.add_tensor("output_norm.weight", hf["norm"])
    bf16 = torch.from_numpy(hf["out"]).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint8)
    w.add_tensor("output.weight", bf16, raw_dtype=Q.BF16)  # the shape comes from the byte shape
    w.add_tensor("ids", hf["ids"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return hf


def add_spm_tokenizer(w: object) -> None:
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    words = ["\u2581", "h", "e", "l", "o", "w", "r", "d", "he", "ll", "llo", "hello", "\u2581hello", "\u2581w", "or",
             "\u2581wor", "\u2581world", "ld"]  # fmt: skip
    scores = [0.0] * len(pieces) + [-float(i) if len(p) == 1 else float(len(p)) for i, p in enumerate(words)]
    w.add_tokenizer_model("llama")  # type: ignore[attr-defined]
    w.add_token_list(pieces + words)  # type: ignore[attr-defined]
    w.add_token_scores(scores)  # type: ignore[attr-defined]
    w.add_token_types(types + [1] * len(words))  # type: ignore[attr-defined]
    w.add_bos_token_id(1)  # type: ignore[attr-defined]
    w.add_eos_token_id(2)  # type: ignore[attr-defined]
    w.add_unk_token_id(0)  # type: ignore[attr-defined]


def test_gguf_float_quantised_and_permuted(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    Q = gguf.GGMLQuantizationType
    hf = write_gguf(tmp_path / "m.gguf")
    convert(tmp_path / "m.gguf", tmp_path / "f32.mag", dtype="float32")
    s = mag.load(tmp_path / "f32.mag", verify=True)
    assert np.array_equal(s["blk.0.attn_q.weight"].numpy(), hf["q"])  # un-permuted exactly
    # quantised: equal to the gguf package's own dequantisation (then un-permuted)
    k = gguf.quants.dequantize(gguf.quants.quantize(llama_permute(hf["k"], N_KV), Q.Q4_0), Q.Q4_0)
    assert np.array_equal(llama_permute(s["blk.0.attn_k.weight"].numpy(), N_KV), k)
    v = gguf.quants.dequantize(gguf.quants.quantize(hf["v"], Q.Q4_1), Q.Q4_1)
    np.testing.assert_allclose(s["blk.0.attn_v.weight"].numpy(), v, rtol=1e-6, atol=1e-6)
    up = gguf.quants.dequantize(gguf.quants.quantize(hf["q8"], Q.Q8_0), Q.Q8_0)
    assert np.array_equal(s["blk.0.ffn_up.weight"].numpy(), up)
    np.testing.assert_allclose(up, hf["q8"], atol=0.05)
    assert s["blk.0.attn_k.weight"].shape == (N_KV * HEAD_DIM, DIM)
    assert np.array_equal(s["token_embd.weight"].numpy(), hf["emb"].astype(np.float16).astype(np.float32))
    assert np.array_equal(s["output_norm.weight"].numpy(), hf["norm"].astype(np.float32))
    assert s["ids"].dtype == mag.int32 and s["ids"].tolist() == list(range(7))
    # default: quantised tensors become bfloat16, float tensors keep their dtype
    convert(tmp_path / "m.gguf", tmp_path / "default.mag")
    d = mag.load(tmp_path / "default.mag")
    assert d["blk.0.ffn_up.weight"].dtype == mag.bfloat16
    assert torch.equal(as_torch(d["blk.0.ffn_up.weight"]), torch.from_numpy(up).to(torch.bfloat16))
    assert d["token_embd.weight"].dtype == mag.float16 and d["output.weight"].dtype == mag.bfloat16
    assert torch.equal(as_torch(d["output.weight"]), torch.from_numpy(hf["out"]).to(torch.bfloat16))
    meta = d.metadata
    assert meta["general.architecture"] == "llama" and meta["gguf.llama.attention.head_count"] == N_HEAD
    assert meta["gguf.test.nested"] == "[[1, 2], [3]]"
    assert meta["tokenizer.chat_template"].startswith("{{ bos_token }}")
    assert "gguf.tokenizer.ggml.tokens" not in meta


def test_gguf_other_arch_is_not_unpermuted(tmp_path: Path) -> None:
    hf = write_gguf(tmp_path / "q.gguf", arch="qwen2")
    convert(tmp_path / "q.gguf", tmp_path / "q.mag", dtype="float32")
    q = mag.load(tmp_path / "q.mag")["blk.0.attn_q.weight"].numpy()
    assert np.array_equal(q, llama_permute(hf["q"], N_HEAD))  # stored as given


def test_gguf_gpt2_tokenizer_becomes_tokenizer_json(tmp_path: Path) -> None:
    tk = pytest.importorskip("tokenizers")
    write_gguf(tmp_path / "m.gguf")
    convert(tmp_path / "m.gguf", tmp_path / "m.mag")
    meta = mag.load(tmp_path / "m.mag").metadata
    ours = tk.Tokenizer.from_str(meta["tokenizer.json"])
    original, _ = gpt2_tokenizer()
    for text in ["hello world", "the lazy fox, 12345!", "über café naïve", "<|im_start|>hello<|endoftext|>", "  x\n"]:
        assert ours.encode(text).ids == original.encode(text).ids, text  # type: ignore[attr-defined]
        assert ours.decode(ours.encode(text).ids, skip_special_tokens=False) == text
    config = json.loads(meta["tokenizer.config"])
    assert config["eos_token"] == "<|endoftext|>" and config["add_bos_token"] is False


def test_gguf_sentencepiece_tokenizer(tmp_path: Path) -> None:
    tk = pytest.importorskip("tokenizers")
    write_gguf(tmp_path / "s.gguf", tokenizer="llama")
    convert(tmp_path / "s.gguf", tmp_path / "s.mag")
    tok = tk.Tokenizer.from_str(mag.load(tmp_path / "s.mag").metadata["tokenizer.json"])
    enc = tok.encode("hello world")
    assert enc.tokens == ["<s>", "\u2581hello", "\u2581world"]
    assert tok.decode(enc.ids) == "hello world"
    enc = tok.encode("hé")  # é is not in the vocabulary: byte fallback
    assert enc.tokens[-2:] == ["<0xC3>", "<0xA9>"]
    assert tok.decode(enc.ids) == "hé"


def test_gguf_unsupported_and_corrupt(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(tmp_path / "k.gguf"), "llama")
    w.add_tensor("q4k", np.zeros((2, 144), np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(mag.FormatError, match="ggml type 12"):
        convert(tmp_path / "k.gguf", tmp_path / "k.mag")
    write_gguf(tmp_path / "m.gguf")
    blob = (tmp_path / "m.gguf").read_bytes()
    for cut in (3, 10, 30, 200, len(blob) // 2, len(blob) - 20):  # the last 4 bytes are padding
        (tmp_path / "cut.gguf").write_bytes(blob[:cut])
        with pytest.raises(mag.FormatError):
            convert(tmp_path / "cut.gguf", tmp_path / "cut.mag")
    bad = bytearray(blob)
    struct.pack_into("<Q", bad, 8, 2**60)  # tensor count
    (tmp_path / "bad.gguf").write_bytes(bytes(bad))
    with pytest.raises(mag.FormatError, match="cannot fit"):
        convert(tmp_path / "bad.gguf", tmp_path / "bad.mag")
    assert not any(p.suffix == ".mag" for p in tmp_path.iterdir())


def test_dequantisation_is_vectorised_for_big_tensors() -> None:
    """A 4M-weight Q4_0 tensor dequantises in one NumPy pass (a loop per block would take seconds)."""
    from magnetron.io.gguf import _dequantize

    raw = np.random.default_rng(0).integers(0, 256, (1 << 17) * 18, dtype=np.uint8)
    raw.reshape(-1, 18)[:, :2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
    out = _dequantize(raw, "Q4_0")
    assert out.shape == (1 << 22,) and out.dtype == np.float32
    q = int(raw[2])
    assert out[0] == ((q & 15) - 8) * 0.5 and out[16] == ((q >> 4) - 8) * 0.5


# ---- the command line ----
def test_cli_convert_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    st = pytest.importorskip("safetensors.torch")
    st.save_file({"w": torch.ones(4, 4)}, tmp_path / "m.safetensors")
    assert cli.main(["convert", str(tmp_path / "m.safetensors"), str(tmp_path / "m.mag"), "--dtype", "bfloat16"]) == 0
    out = capsys.readouterr()
    assert "1 tensors" in out.out and out.err == ""  # no progress bar when stderr is not a terminal
    assert mag.load(tmp_path / "m.mag")["w"].dtype == mag.bfloat16
    assert cli.main(["verify", str(tmp_path / "m.mag")]) == 0
    assert "checksums match" in capsys.readouterr().out
    blob = bytearray((tmp_path / "m.mag").read_bytes())
    blob[-1] ^= 1
    (tmp_path / "m.mag").write_bytes(bytes(blob))
    assert cli.main(["verify", str(tmp_path / "m.mag")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "magnetron verify: error:" in err and "checksum mismatch" in err
    assert cli.main(["convert", str(tmp_path / "missing"), str(tmp_path / "x.mag")]) == 1
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["convert", "--help"])
    assert e.value.code == 0 and "--dtype" in capsys.readouterr().out


def test_progress_bar_switches(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from magnetron.utils import progress as p

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("MAGNETRON_PROGRESS", "0")
    assert not p.enabled()
    monkeypatch.setenv("MAGNETRON_PROGRESS", "1")
    assert p.enabled()
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the fallback bar
    with p.progress(2_000_000, "convert") as bar:
        bar.update(1_000_000)
        bar.update(1_000_000)
    assert "convert: 100% 2.0 MB/2.0 MB" in capsys.readouterr().err


def test_safetensors_import_needs_neither_torch_nor_numpy(tmp_path: Path) -> None:
    """The native parser: a fresh interpreter where importing torch or numpy fails."""
    st = pytest.importorskip("safetensors.torch")
    st.save_file({"w": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)}, tmp_path / "m.safetensors")
    script = (
        "import sys; sys.modules['torch'] = None; sys.modules['numpy'] = None\n"
        "import magnetron as mag\n"
        "from magnetron.io.convert import convert\n"
        f"convert({str(tmp_path / 'm.safetensors')!r}, {str(tmp_path / 'm.mag')!r})\n"
        f"print(mag.load({str(tmp_path / 'm.mag')!r})['w'].tolist())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]"
