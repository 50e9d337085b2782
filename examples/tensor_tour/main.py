"""A short tour of magnetron tensors: creation, views, indexing, broadcasting and interop."""

import magnetron as mag


def main() -> None:
    mag.context.manual_seed(0)
    x = mag.Tensor.arange(12, dtype=mag.float32).reshape(3, 4)
    print("x =", x)
    print("x.T (a view, no copy):", x.T, "is_contiguous:", x.T.is_contiguous)
    print("x[:, ::-2] =", x[:, ::-2])
    print("x[x > 5] (boolean mask, copies):", x[x > 5])
    print("broadcast x + [10, 20, 30, 40] =", x + mag.Tensor([10.0, 20.0, 30.0, 40.0]))
    w = mag.Tensor.normal(2, 3, dtype=mag.bfloat16)
    print("bfloat16 normal:", w)
    print("shape", x.shape, "strides", x.strides, "dtype", x.dtype, "numel", x.numel)
    try:
        import numpy as np

        a = x.numpy()  # zero copy
        a[0, 0] = 100.0
        print("written through NumPy, seen by magnetron:", x[0, 0].item())
        print("from NumPy:", mag.Tensor(np.eye(2, dtype=np.float16)))
    except ImportError:
        print("(install numpy to see the zero-copy interop)")


if __name__ == "__main__":
    main()
