"""Misuse from Python: the right exception type, a message naming the op and the shapes/dtypes, no crash."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import magnetron as mag
import numpy as np
import pytest

T = mag.Tensor


def x23() -> mag.Tensor:
    return T.zeros(2, 3)


def _setitem(t: mag.Tensor, key: Any, value: Any) -> None:
    t[key] = value


def _set_threads(n: Any) -> None:
    mag.context.num_threads = n


def _read_only() -> mag.Tensor:
    a = np.arange(4.0)
    a.flags.writeable = False
    return T.from_dlpack(a)


# (id, action, exception type, fragments the message must contain: the op, then shapes/dtypes)
CASES: list[tuple[str, Callable[[], Any], type[BaseException], list[str]]] = [
    # sizes and shapes
    ("negative_size", lambda: T.zeros(2, -1), ValueError, ["zeros", "(2, -1)"]),
    ("negative_size_empty", lambda: T.empty(-3), ValueError, ["empty", "(-3,)"]),
    ("float_size", lambda: T.ones(2.5), TypeError, ["ones", "float"]),
    ("bool_size", lambda: T.zeros(True), TypeError, ["zeros", "bool"]),
    ("rank_17", lambda: T.zeros(*[1] * 17), ValueError, ["empty", "rank 17"]),
    ("unaddressable", lambda: T.empty(2**40, 2**40), MemoryError, ["empty", "(1099511627776, 1099511627776)"]),
    ("unallocatable", lambda: T.empty(2**50), MemoryError, ["empty", "float32", "(1125899906842624,)"]),
    ("arange_unallocatable", lambda: T.arange(0, 2**62, dtype=mag.int8), MemoryError, ["int8"]),
    # views
    ("view_numel", lambda: x23().view(4, 2), ValueError, ["view", "(4, 2)", "(2, 3)"]),
    ("view_two_infer", lambda: x23().view(-1, -1), ValueError, ["view", "(-1, -1)", "(2, 3)"]),
    ("view_negative", lambda: x23().view(-2, 3), ValueError, ["view", "(-2, 3)"]),
    ("view_impossible", lambda: x23().T.view(6), RuntimeError, ["view", "(6,)", "(3, 2)", "reshape"]),
    ("reshape_numel", lambda: x23().reshape(5), ValueError, ["reshape", "(5,)", "(2, 3)"]),
    ("transpose_dim", lambda: x23().transpose(0, 2), IndexError, ["transpose", "(2, 3)", "2"]),
    ("permute_count", lambda: x23().permute(0), ValueError, ["permute", "(2, 3)"]),
    ("permute_repeat", lambda: x23().permute(1, 1), ValueError, ["permute", "(2, 3)"]),
    ("permute_dim", lambda: x23().permute(0, 5), IndexError, ["permute", "(2, 3)"]),
    ("squeeze_dim", lambda: x23().squeeze(-3), IndexError, ["squeeze", "(2, 3)"]),
    ("unsqueeze_dim", lambda: x23().unsqueeze(4), IndexError, ["unsqueeze", "(2, 3)"]),
    ("unsqueeze_rank", lambda: T.zeros(*[1] * 16).unsqueeze(0), ValueError, ["unsqueeze", "rank 16"]),
    ("flatten_order", lambda: x23().flatten(1, 0), ValueError, ["flatten", "(2, 3)"]),
    ("unflatten_sizes", lambda: x23().unflatten(1, (2, 2)), ValueError, ["unflatten", "(2, 2)", "(2, 3)"]),
    ("narrow_range", lambda: x23().narrow(1, 2, 2), IndexError, ["narrow", "(2, 3)"]),
    ("narrow_rank0", lambda: T(1.0).narrow(0, 0, 1), IndexError, ["narrow", "()"]),
    ("view_slice_range", lambda: x23().view_slice(1, 0, 4), IndexError, ["slice", "(2, 3)"]),
    ("view_slice_step0", lambda: x23().view_slice(1, 0, 2, 0), ValueError, ["slice", "step", "(2, 3)"]),
    ("select_range", lambda: x23().select(0, 2), IndexError, ["select", "(2, 3)"]),
    ("select_rank0", lambda: T(1.0).select(0, 0), IndexError, ["select", "rank-0"]),
    ("movedim_dim", lambda: x23().movedim(0, 5), IndexError, ["movedim", "(2, 3)"]),
    ("movedim_repeat", lambda: x23().movedim((0, 0), (0, 1)), ValueError, ["movedim", "(2, 3)"]),
    ("expand_bad", lambda: x23().expand(4, 3), ValueError, ["expand", "(2, 3)", "(4, 3)"]),
    ("expand_rank", lambda: x23().expand(3), ValueError, ["expand", "(2, 3)", "(3,)"]),
    ("broadcast_to_bad", lambda: x23().broadcast_to((3, 3)), ValueError, ["expand", "(2, 3)", "(3, 3)"]),
    ("split_sections", lambda: x23().split([1, 2]), ValueError, ["split", "(2, 3)"]),
    ("split_size", lambda: x23().split(0), ValueError, ["split", "(2, 3)"]),
    ("chunk_zero", lambda: x23().chunk(0), ValueError, ["chunk", "(2, 3)"]),
    ("unbind_rank0", lambda: T(1.0).unbind(), IndexError, ["unbind", "()"]),
    ("size_dim", lambda: x23().size(2), IndexError, ["size", "(2, 3)"]),
    ("as_strided_outside", lambda: x23()._as_strided((10,), (1,), 0), ValueError, ["as_strided", "(10,)"]),
    ("as_strided_wraps", lambda: x23()._as_strided((2, 3), (2**62, 1), 0), ValueError, ["as_strided", "(2, 3)"]),
    ("as_strided_negative", lambda: x23()._as_strided((3,), (-1,), 1), ValueError, ["as_strided", "(3,)"]),
    # indexing
    ("index_range", lambda: x23()[2], IndexError, ["select", "(2, 3)"]),
    ("index_negative_range", lambda: x23()[:, -4], IndexError, ["select", "(2, 3)"]),
    ("index_too_many", lambda: x23()[0, 0, 0], IndexError, ["index", "too many", "(2, 3)"]),
    ("index_two_ellipsis", lambda: x23()[..., ...], IndexError, ["index", "ellipsis", "(2, 3)"]),
    ("index_slice_step0", lambda: x23()[::0], ValueError, ["index", "step", "(2, 3)"]),
    ("index_float", lambda: x23()[1.5], IndexError, ["index", "float", "(2, 3)"]),
    ("index_str", lambda: x23()["a"], IndexError, ["index", "str", "(2, 3)"]),
    ("index_list_range", lambda: x23()[[0, 2]], IndexError, ["index", "out of bounds", "(2, 3)"]),
    ("index_tensor_range", lambda: x23()[:, T([3])], IndexError, ["index", "out of bounds", "(2, 3)"]),
    ("index_float_tensor", lambda: x23()[T([0.5])], IndexError, ["index", "float32", "(1,)"]),
    ("index_broadcast", lambda: x23()[[0, 1], [0, 1, 2]], IndexError, ["index", "(2,)", "(3,)"]),
    ("mask_shape", lambda: x23()[T([True, False, True])], IndexError, ["index", "mask", "(3,)", "(2, 3)"]),
    ("mask_shape_2d", lambda: x23()[T.zeros(3, 2, dtype=mag.boolean)], IndexError, ["index", "mask", "(3, 2)"]),
    ("setitem_shape", lambda: _setitem(x23(), 0, T.zeros(4)), ValueError, ["setitem", "(4,)", "(2, 3)"]),
    ("setitem_adv_shape", lambda: _setitem(x23(), [0, 1], T.zeros(3, 3)), ValueError, ["setitem", "(3, 3)", "(2, 3)"]),
    ("setitem_broadcast_idx", lambda: _setitem(x23(), ([0, 1], [0, 1, 2]), 1.0), IndexError, ["index", "(2,)", "(3,)"]),
    ("setitem_bad_value", lambda: _setitem(x23(), 0, "a"), TypeError, ["Tensor", "str"]),
    # writes that cannot be done
    ("write_expanded", lambda: T.zeros(1, 3).expand(4, 3).fill_(1.0), RuntimeError, ["fill", "(4, 3)", "(0, 1)"]),
    ("copy_into_expanded", lambda: T.zeros(3, 1).expand(3, 3).copy_(T.ones(3, 3)), RuntimeError, ["copy_", "(3, 3)"]),
    ("setitem_expanded", lambda: _setitem(T.zeros(3, 1).expand(3, 3), 0, 1.0), RuntimeError, ["(3,)"]),
    ("write_read_only", lambda: _read_only().fill_(1.0), RuntimeError, ["fill", "read-only", "(4,)"]),
    ("copy_shape", lambda: x23().copy_(T.zeros(3, 2)), ValueError, ["copy_", "(3, 2)", "(2, 3)"]),
    ("fill_none", lambda: x23().fill_(None), TypeError, ["fill_", "NoneType", "(2, 3)"]),
    # scalars out of tensors
    ("bool_multi", lambda: bool(x23()), RuntimeError, ["bool", "(2, 3)"]),
    ("item_multi", lambda: x23().item(), RuntimeError, ["item", "(2, 3)"]),
    ("float_multi", lambda: float(x23()), RuntimeError, ["float", "(2, 3)"]),
    ("int_multi", lambda: int(T.zeros(2, dtype=mag.int32)), RuntimeError, ["int", "(2,)"]),
    ("index_from_float", lambda: [0, 1][T(1.0)], TypeError, ["index", "float32", "()"]),
    ("len_rank0", lambda: len(T(1.0)), TypeError, ["len", "rank-0"]),
    ("iter_rank0", lambda: iter(T(1.0)), TypeError, ["iteration", "rank-0"]),
    # dtypes and data
    ("bad_dtype", lambda: T([1.0], dtype="float128"), TypeError, ["Tensor", "float128"]),
    ("bad_dtype_object", lambda: T.zeros(2, dtype=np.float32), TypeError, ["zeros", "float32"]),
    ("cast_bad_dtype", lambda: x23().cast(3), TypeError, ["cast", "3"]),
    ("ragged", lambda: T([[1, 2], [3]]), ValueError, ["Tensor", "ragged", "length 2"]),
    ("ragged_scalar", lambda: T([1, [2]]), ValueError, ["Tensor", "ragged"]),
    ("list_of_str", lambda: T([1, "a"]), TypeError, ["Tensor", "str"]),
    ("dict", lambda: T({1: 2}), TypeError, ["Tensor", "dict"]),
    ("int_too_big", lambda: T(2**64), OverflowError, ["Tensor", "64 bits"]),
    ("int_mix", lambda: T([2**63, -1]), OverflowError, ["Tensor", "2**63"]),
    ("big_endian", lambda: T(np.array([1, 2], dtype=">i4")), TypeError, ["Tensor", "buffer format", ">i"]),
    ("complex_buffer", lambda: T(np.array([1 + 2j])), TypeError, ["Tensor", "buffer format", "Zd"]),
    ("struct_buffer", lambda: T(np.zeros(2, dtype=[("a", "i4")])), TypeError, ["Tensor", "buffer format"]),
    ("numpy_bf16", lambda: T.zeros(2, dtype=mag.bfloat16).numpy(), TypeError, ["numpy", "bfloat16"]),
    ("buffer_bf16", lambda: memoryview(T.zeros(2, dtype=mag.bfloat16)), BufferError, ["bfloat16"]),
    ("from_dlpack_list", lambda: T.from_dlpack([1, 2]), TypeError, ["from_dlpack", "list"]),
    ("requires_grad_int", lambda: T.zeros(2, dtype=mag.int64, requires_grad=True), RuntimeError,
     ["requires_grad", "int64"]),
    # factories
    ("arange_step0", lambda: T.arange(0, 3, 0), ValueError, ["arange", "step"]),
    ("arange_inf", lambda: T.arange(float("inf")), ValueError, ["arange", "finite"]),
    ("arange_bool_dtype", lambda: T.arange(3, dtype=mag.boolean), TypeError, ["arange", "boolean", "(3,)"]),
    ("uniform_order", lambda: T.uniform(2, low=1.0, high=0.0), ValueError, ["uniform", "low"]),
    ("uniform_int_range", lambda: T.uniform(2, low=0, high=256, dtype=mag.uint8), ValueError, ["uniform", "uint8"]),
    ("normal_int", lambda: T.normal(2, dtype=mag.int32), TypeError, ["normal", "int32", "(2,)"]),
    ("normal_std", lambda: T.normal(2, std=-1.0), ValueError, ["normal", "std"]),
    ("bernoulli_p", lambda: T.bernoulli(2, p=1.5), ValueError, ["bernoulli", "1.5"]),
    ("rand_perm_negative", lambda: T.rand_perm(-1), ValueError, ["rand_perm", "-1"]),
    ("fill_str", lambda: T.full(2, fill_value="a"), TypeError, ["fill", "str"]),
    ("num_threads_zero", lambda: _set_threads(0), ValueError, ["num_threads", "0"]),
    ("num_threads_float", lambda: _set_threads(1.5), TypeError, ["num_threads", "float"]),
    ("seed_float", lambda: mag.context.manual_seed(0.5), TypeError, ["manual_seed", "float"]),
]


@pytest.mark.parametrize(("name", "action", "exc", "fragments"), CASES, ids=[c[0] for c in CASES])
def test_misuse_raises_a_clear_error(name: str, action: Callable[[], Any], exc: type[BaseException],
                                     fragments: list[str]) -> None:
    with pytest.raises(exc) as info:
        action()
    assert type(info.value) is exc or exc is BufferError, (type(info.value), exc)  # the exact type, not a subclass
    message = str(info.value)
    for f in fragments:
        assert f in message, f"{f!r} not in {message!r}"


def test_enough_distinct_cases() -> None:
    assert len({c[0] for c in CASES}) == len(CASES) >= 30


def test_failed_ops_leave_tensors_usable() -> None:
    x = T.arange(6, dtype=mag.float32).view(2, 3)
    for action, _, _ in [(c[1], c[2], c[3]) for c in CASES[:40]]:
        try:
            action()
        except Exception:
            pass
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    live, _ = mag._C.alloc_stats()
    assert live < 1 << 30  # nothing huge leaked from the failed allocations


def test_format_error_is_a_value_error() -> None:
    assert issubclass(mag.FormatError, ValueError)


# The most dangerous misuse runs in a child interpreter: if anything crashed, only the child would die.
DANGEROUS = """
import numpy as np, magnetron as mag
T = mag.Tensor
caught = 0
def attempt(f):
    global caught
    try:
        f()
    except (ValueError, TypeError, IndexError, MemoryError, RuntimeError, OverflowError, BufferError):
        caught += 1
x = T.zeros(2, 3)
attempt(lambda: T.empty(2**62))
attempt(lambda: T.empty(2**31, 2**31, 2**31))
attempt(lambda: T.zeros(*[2**4] * 16))
attempt(lambda: x._as_strided((3,), (-1,), 0))
attempt(lambda: x._as_strided((2, 3), (2**62, 1), 0))
attempt(lambda: x._as_strided((2**62,), (1,), 0))
attempt(lambda: x[[2**62]])
attempt(lambda: x[[-2**63]])
attempt(lambda: x[T([2**63 - 1])])
attempt(lambda: x.view_slice(0, 2**62, 1))
attempt(lambda: x.view_slice(0, 0, 2**62, 2**62))
attempt(lambda: x.view_slice(0, -2**63, 1, -1))
attempt(lambda: x.expand(-5, 3))
attempt(lambda: x.expand(2**62, 2**62, 2, 3))
attempt(lambda: x.view(2**62, 0))
attempt(lambda: x.reshape(-1, 0))
attempt(lambda: T.zeros(1, 3).expand(4, 3).copy_(T.ones(4, 3)))
attempt(lambda: T(eval("[" * 18 + "1" + "]" * 18)))
attempt(lambda: T(np.zeros((1,) * 32)))
attempt(lambda: T.from_dlpack(np.zeros((1,) * 32)))
attempt(lambda: mag.Tensor.arange(0, 2**63 - 1))
attempt(lambda: mag.Tensor.rand_perm(2**62))
deep = [1]
for _ in range(100000):
    deep = [deep]
attempt(lambda: T(deep))
for i in range(-20, 20):
    attempt(lambda: x.permute(i, 0))
    attempt(lambda: x.squeeze(i))
    attempt(lambda: x.transpose(i, -i))
print("survived", caught)
"""


def test_dangerous_misuse_does_not_crash_the_interpreter() -> None:
    root = Path(mag.__file__).parent.parent
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(DANGEROUS)], capture_output=True, text=True,
                       timeout=120, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "survived" in r.stdout
    assert int(r.stdout.split()[-1]) >= 24, r.stdout
