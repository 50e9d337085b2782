"""The ``magnetron`` command line.

Each subcommand is a function that adds its parser to ``COMMANDS``; ``main`` dispatches and
turns expected failures (a bad file, a missing file, a bad argument, a missing optional
package) into one line on stderr and exit status 1. Subcommand groups live in modules of their
own (cli_models: info, pull; cli_chat: generate, chat), each listing its ``SUBCOMMANDS``; they
import their heavy dependencies when they run, so ``magnetron --help`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .utils.progress import LazyProgress


@dataclass(frozen=True)
class Command:
    help: str
    add_args: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {}
_EXTRA_PACKAGES = ("numpy", "tokenizers", "jinja2")  # optional: commands that need one say which extra brings it


def register(name: str, help: str, add_args: Callable[[argparse.ArgumentParser], None],
             run: Callable[[argparse.Namespace], int]) -> None:  # fmt: skip
    """Add a subcommand: ``add_args`` fills its parser, ``run`` returns the exit status."""
    COMMANDS[name] = Command(help, add_args, run)


def _convert_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", help="a Hugging Face model folder, or a .safetensors, .bin/.pt, .gguf or .mag file")
    p.add_argument("dst", help="the .mag snapshot to write")
    p.add_argument(
        "--dtype",
        choices=["float32", "bfloat16", "float16"],
        help="cast floating-point tensors to this dtype (quantised GGUF tensors: default bfloat16)",
    )


def _convert(ns: argparse.Namespace) -> int:
    from .io.convert import convert

    bar = LazyProgress("convert")
    try:
        done = convert(ns.src, ns.dst, dtype=ns.dtype, on_start=bar.start, on_tensor=bar.update)
    finally:
        bar.close()
    print(f"wrote {ns.dst}: {done['tensors']} tensors, {done['bytes'] / 1e6:.1f} MB")
    return 0


def _verify_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="the .mag snapshot to check")


def _verify(ns: argparse.Namespace) -> int:
    from .io.mag import load

    snap = load(ns.file)  # checks the header, directory and header checksum
    bar = LazyProgress("verify")
    bar.start(sum(snap.info(name)["nbytes"] for name in snap))
    try:
        snap.verify(progress=bar.update)
    finally:
        bar.close()
    size = f"{len(snap)} tensors, {snap.nbytes / 1e6:.1f} MB"
    print(f"{ns.file}: OK (format version {snap.version}, {size}, checksums match)")
    return 0


def _register_all() -> None:
    from . import cli_chat, cli_models

    for args in (
        *cli_models.SUBCOMMANDS,
        ("convert", "import safetensors, PyTorch or GGUF weights into a .mag snapshot", _convert_args, _convert),
        ("verify", "check a .mag snapshot, including every tensor's checksum", _verify_args, _verify),
        *cli_chat.SUBCOMMANDS,
    ):
        register(*args)


_register_all()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="magnetron", description="magnetron: a compact ML runtime.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, cmd in COMMANDS.items():
        cmd.add_args(sub.add_parser(name, help=cmd.help, description=cmd.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    prog = f"magnetron {ns.command}"
    try:
        return COMMANDS[ns.command].run(ns)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as e:
        if e.name not in _EXTRA_PACKAGES:
            raise
        extra = "io" if ns.command == "convert" else "chat"
        print(f"{prog}: error: needs the {e.name} package: pip install 'magnetron[{extra}]'", file=sys.stderr)
        return 1
    except (OSError, ValueError, TypeError, RuntimeError, ImportError) as e:  # FormatError is a ValueError
        message = str(e)
        head, sep, rest = message.partition(": ")
        if sep and head in COMMANDS:  # the library names its function, which the line names already
            message = rest
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
