"""``franz <tool>``: the command-line entry point.

Tools are named after Kafka's scripts without ``kafka-`` and ``.sh`` (``franz broker``,
later ``franz topics``, ``franz console-consumer``, ...). Each lives in
``franz.cli.tools.<name>`` and exposes ``add_arguments(parser)`` and ``run(args) -> int``;
its module docstring is its help. Exceptions become exit codes here, in one place.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from franz import __version__
from franz.errors import FranzError

__all__ = ["main"]

#: tool name -> module under franz.cli.tools
TOOLS: dict[str, str] = {
    "broker": "broker",
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="franz", description="Franz: Kafka's protocol and log.")
    parser.add_argument("--version", action="version", version=f"franz {__version__}")
    sub = parser.add_subparsers(dest="tool", metavar="<tool>")
    modules = {}
    for name, module_name in TOOLS.items():
        module = importlib.import_module(f"franz.cli.tools.{module_name}")
        doc = (module.__doc__ or "").strip()
        tool_parser = sub.add_parser(
            name,
            help=doc.splitlines()[0] if doc else None,
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(tool_parser)
        modules[name] = module
    args = parser.parse_args(argv)
    if args.tool is None:
        parser.print_help()
        return 2
    try:
        return int(modules[args.tool].run(args))
    except FranzError as exc:
        print(f"franz {args.tool}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
