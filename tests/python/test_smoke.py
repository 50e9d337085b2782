import magnetron as mag


def test_version() -> None:
    assert isinstance(mag.__version__, str)


def test_add_matches_python() -> None:
    a = mag.Tensor([[1.0, 2.0], [3.0, 4.0]])
    assert (a + 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]
