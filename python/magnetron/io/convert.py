"""``magnetron convert``: any supported checkpoint -> a .mag snapshot.

Sources: a Hugging Face model folder (safetensors, sharded or not, or PyTorch ``.bin``), a
``.safetensors`` / ``*.index.json`` / ``.bin`` / ``.pt`` / ``.gguf`` / ``.mag`` file. Tensors
are read, cast and written one at a time, so memory stays at about one tensor.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from pathlib import Path

from .. import __version__
from .. import dtype as _dt
from .._C import FormatError
from .._tensor import Tensor
from ..models import gpt2
from .mag import PathLike, TensorSpec, load, write
from .source import Source

CAST_DTYPES = {"float32": _dt.float32, "bfloat16": _dt.bfloat16, "float16": _dt.float16}


class MagSource(Source):
    format = "mag"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.snap = load(path)
        self.metadata = dict(self.snap.metadata)
        self.specs = [TensorSpec(n, t.dtype, tuple(t.shape)) for n, t in self.snap.items()]

    def tensor(self, spec: TensorSpec) -> Tensor:
        return self.snap[spec.name]


def _sniff(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.read(8)
    if head.startswith(b"GGUF"):
        return "gguf"
    if head.startswith(b"\x89MAG"):
        return "mag"
    if head.startswith(b"PK") or head[:1] == b"\x80":  # zip archive or a legacy pickle
        return "pytorch"
    return "safetensors"


def _folder_weights(folder: Path) -> tuple[str, list[Path]]:
    for index, kind in (("model.safetensors.index.json", "safetensors"), ("pytorch_model.bin.index.json", "pytorch")):
        if (folder / index).is_file():
            return kind + "-index", [folder / index]
    for pattern, kind in (("*.safetensors", "safetensors"), ("*.bin", "pytorch"), ("*.pt", "pytorch"),
                          ("*.pth", "pytorch"), ("*.gguf", "gguf")):  # fmt: skip
        files = sorted(folder.glob(pattern))
        if files and (kind != "gguf" or len(files) == 1):
            return kind, files
    raise FileNotFoundError(f"no weights (*.safetensors, *.bin, *.pt, *.gguf) in '{folder}'")


def open_source(src: PathLike, dequant_dtype: _dt.DType = _dt.bfloat16) -> Source:
    """The importer for ``src``, a model folder or a weights file."""
    path = Path(src)
    if path.is_dir():
        kind, files = _folder_weights(path)
    elif path.is_file():
        name = path.name
        kind = "safetensors-index" if name.endswith(".safetensors.index.json") else (
            "pytorch-index" if name.endswith(".bin.index.json") else _sniff(path))  # fmt: skip
        files = [path]
    else:
        raise FileNotFoundError(f"'{src}' does not exist")
    folder = files[0].parent
    if kind == "gguf":
        from .gguf import GGUFSource

        return GGUFSource(files[0], dequant_dtype)
    if kind == "mag":
        return MagSource(files[0])
    from .hf import folder_metadata

    source: Source
    if kind.endswith("-index"):
        from .safetensors import read_index

        files, weight_map = read_index(files[0])
    if kind.startswith("safetensors"):
        from .safetensors import SafetensorsSource

        source = SafetensorsSource(files, weight_map if kind.endswith("-index") else None)
    else:
        from .pytorch import TorchSource

        source = TorchSource(files)
    source.metadata = folder_metadata(folder) | source.metadata
    return source


def convert(
    src: PathLike,
    dst: PathLike,
    dtype: str | _dt.DType | None = None,
    on_start: Callable[[int], None] | None = None,
    on_tensor: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Import ``src`` into the .mag snapshot ``dst``.

    ``dtype`` (float32, bfloat16 or float16) casts floating-point tensors; quantised GGUF
    tensors are dequantised to it (bfloat16 when not given). ``on_start(total_bytes)`` and
    ``on_tensor(nbytes)`` report progress. Returns counts of tensors and bytes written.
    """
    target = None
    if dtype is not None:
        name = dtype.name if isinstance(dtype, _dt.DType) else dtype
        if name not in CAST_DTYPES:
            raise ValueError(f"convert: dtype must be one of {', '.join(CAST_DTYPES)}, got {dtype!r}")
        target = CAST_DTYPES[name]
    if not os.fspath(dst).endswith(".mag"):
        raise ValueError(f"convert: the destination should end in .mag, got '{os.fspath(dst)}'")
    source = open_source(src, target or _dt.bfloat16)
    if not source.specs:
        raise FormatError(f"'{src}': no tensors to convert")
    out = [s._replace(dtype=target) if target and s.dtype.is_floating_point else s for s in source.specs]
    by_name = {s.name: s for s in source.specs}
    meta = dict(source.metadata)
    # GPT-2's Conv1D projections are stored in the nn.Linear layout, which decode streams faster
    transpose = gpt2.conv1d_weights(meta, by_name)
    out = [s._replace(shape=s.shape[::-1]) if s.name in transpose else s for s in out]
    if transpose:
        meta[gpt2.LAYOUT_KEY] = "out_in"
    meta |= {
        "provenance.source": Path(src).resolve().name,
        "provenance.source_format": source.format,
        "provenance.converter": f"magnetron {__version__}",
        "provenance.created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if target is not None:
        meta["provenance.dtype"] = target.name
    total = sum(s.nbytes for s in out)
    if on_start is not None:
        on_start(total)

    def fetch(spec: TensorSpec) -> Tensor:
        t = source.tensor(by_name[spec.name])
        return (t.T if spec.name in transpose else t).cast(spec.dtype)  # a cast copies: contiguous

    write(dst, out, fetch, meta, on_tensor)
    return {"tensors": len(out), "bytes": total}
