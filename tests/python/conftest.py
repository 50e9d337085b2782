import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run the exhaustive (slow) sweeps")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="exhaustive sweep: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config: pytest.Config) -> str:
    import magnetron as mag  # here, not at the top: a bad MAGNETRON_CPU_VARIANT then fails loudly in the header

    info = mag.context.cpu_info()
    return f"magnetron cpu variant: {info['variant']} (available: {', '.join(info['variants_available'])})"
