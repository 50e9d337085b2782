"""Opt-in test groups shared by tests/python and tests/models: each marker runs only with its option."""

import pytest

OPT_IN = {  # marker -> (command-line option, what it runs)
    "slow": ("--runslow", "exhaustive sweep"),
    "models_big": ("--models-big", "full-size model shapes"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    for option, what in OPT_IN.values():
        parser.addoption(option, action="store_true", default=False, help=f"run the {what} tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker, (option, what) in OPT_IN.items():
        if config.getoption(option):
            continue
        skip = pytest.mark.skip(reason=f"{what}: run with {option}")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


def pytest_report_header(config: pytest.Config) -> str:
    import magnetron as mag  # here, not at the top: a bad MAGNETRON_CPU_VARIANT then fails loudly in the header

    info = mag.context.cpu_info()
    return f"magnetron cpu variant: {info['variant']} (available: {', '.join(info['variants_available'])})"
