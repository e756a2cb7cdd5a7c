"""``franz <tool>``: the command-line entry point.

Tools are named after Kafka's scripts without ``kafka-`` and ``.sh`` (``franz broker``,
``franz topics``, ``franz console-consumer``, ...). Each lives in ``franz.cli.tools.<module>``
and exposes ``add_arguments(parser)`` and ``run(args) -> int``; its module docstring is its
``--help``. Only the tool being run is imported, so a tool's dependencies (librdkafka for the
client tools) are loaded only when it is used. Exceptions become exit codes here, in one
place: ``FranzError`` -> 1 with a one-line ``franz <tool>: error: ...`` on stderr; bad flags
-> 2 (argparse); Ctrl-C -> 130; a closed stdout pipe -> 141, silently.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from franz import __version__
from franz.errors import FranzError

__all__ = ["TOOLS", "main"]

#: tool name -> (module under franz.cli.tools, one-line summary for ``franz --help``)
TOOLS: dict[str, tuple[str, str]] = {
    "broker": ("broker", "run a broker (kafka-server-start.sh)"),
    "consumer-groups": ("consumer_groups", "manage consumer groups (kafka-consumer-groups.sh)"),
    "topics": ("topics", "create, delete, describe, or change a topic (kafka-topics.sh)"),
    "configs": ("configs", "describe or alter topic and broker configs (kafka-configs.sh)"),
    "console-producer": ("console_producer", "produce lines of stdin (kafka-console-producer.sh)"),
    "console-consumer": ("console_consumer", "print records (kafka-console-consumer.sh)"),
    "producer-perf-test": ("producer_perf_test", "measure producing (kafka-producer-perf-test.sh)"),
    "consumer-perf-test": ("consumer_perf_test", "measure consuming (kafka-consumer-perf-test.sh)"),
    "end-to-end-latency": ("end_to_end_latency", "measure end-to-end latency (EndToEndLatency)"),
    "dump-log-segments": ("dump_log", "dump segment and index files (kafka-dump-log.sh)"),
    "leader-election": ("leader_election", "elect partition leaders (kafka-leader-election.sh)"),
    "reassign-partitions": ("reassign_partitions", "move replicas (kafka-reassign-partitions.sh)"),
    "log-dirs": ("log_dirs", "describe brokers' log directories (kafka-log-dirs.sh)"),
    "get-offsets": ("get_offsets", "print partitions' offsets (kafka-get-offsets.sh)"),
    "delete-records": ("delete_records", "delete old records (kafka-delete-records.sh)"),
    "transactions": ("transactions", "inspect and abort transactions (kafka-transactions.sh)"),
    "acls": ("acls", "add, remove and list ACLs (kafka-acls.sh)"),
    "console": ("web_console", "a web console for a Kafka cluster (franz.console)"),
}


def _top_parser() -> argparse.ArgumentParser:
    width = max(len(name) for name in TOOLS)
    listing = "\n".join(f"  {name.ljust(width)}  {summary}" for name, (_, summary) in TOOLS.items())
    parser = argparse.ArgumentParser(
        prog="franz",
        usage="franz [--version] <tool> [options]",
        description="Franz: Kafka's protocol and log. Tools:\n" + listing,
        epilog="franz <tool> --help shows a tool's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"franz {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if not args_in or args_in[0].startswith("-"):
        top = _top_parser()
        top.parse_args(args_in)  # --version / --help exit here
        top.print_help()
        return 2
    name, rest = args_in[0], args_in[1:]
    if name not in TOOLS:
        _top_parser().error(f"unknown tool {name!r}; choose from {', '.join(TOOLS)}")
    module = importlib.import_module(f"franz.cli.tools.{TOOLS[name][0]}")
    doc = (module.__doc__ or "").strip()
    parser = argparse.ArgumentParser(
        prog=f"franz {name}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    args.tool = name
    try:
        return int(module.run(args))
    except FranzError as exc:
        print(f"franz {name}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (``franz ... | head``): stop quietly, as Unix tools
        # do, and keep the interpreter from complaining when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
