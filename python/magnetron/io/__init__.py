"""Files: .mag snapshots (``save``, ``load``, ``Snapshot``) and importers.

The importers (``magnetron.io.convert``: safetensors, PyTorch checkpoints, GGUF) need NumPy
and are imported on demand, so ``import magnetron`` stays dependency-free.
"""

from .mag import Snapshot, TensorSpec, load, save

__all__ = ["Snapshot", "TensorSpec", "load", "save"]
