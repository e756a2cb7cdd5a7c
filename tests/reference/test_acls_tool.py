"""``franz acls`` against Kafka 3.9.2's own ``kafka-acls.sh`` (``kafka.admin.AclCommand``),
both brokers running ``AclAuthorizer`` with ``User:ANONYMOUS`` as super user.

The same command sequence runs three times: Kafka's tool on Kafka (the oracle), Kafka's tool
on Franz (CreateAcls, DescribeAcls, DeleteAcls as Kafka's Java admin client speaks them), and
Franz's tool on Franz. Outputs must be equal line for line, except the order of resources
and of entries within one, which Kafka prints from Scala sets (hash order): each block is
compared with its entry lines sorted, and the blocks of one command sorted.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.broker import BrokerProcess
from tests.support.kafka_ref import KafkaBroker, run_franz_tool, run_kafka_tool

ACL_COMMAND = "kafka.admin.AclCommand"
AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}
COMMANDS: list[list[str]] = [
    ["--add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Read",
     "--topic", "orders"],
    ["--add", "--producer", "--allow-principal", "User:bob", "--topic", "pay",
     "--resource-pattern-type", "prefixed", "--transactional-id", "tx"],
    ["--add", "--consumer", "--allow-principal", "User:carol", "--topic", "orders",
     "--group", "billing"],
    ["--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.9", "--operation",
     "All", "--topic", "orders"],
    ["--add", "--allow-principal", "User:ops", "--operation", "Alter", "--cluster"],
    ["--list"],
    ["--list", "--topic", "orders"],
    ["--list", "--principal", "User:bob"],
    ["--list", "--topic", "payments", "--resource-pattern-type", "match"],
    ["--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
     "--topic", "orders"],
    ["--list", "--topic", "orders"],
    ["--remove", "--force", "--topic", "orders"],
    ["--list"],
]  # fmt: skip


def _normalized(output: str) -> list[list[str]]:
    """Blocks (separated by empty lines), each with its entry lines sorted, the blocks sorted;
    ``ACLs for principal`` headings first, in their order."""
    headings = [line for line in output.split("\n") if line.startswith("ACLs for principal")]
    body = "\n".join(line for line in output.split("\n") if line not in headings)
    blocks: list[list[str]] = []
    for chunk in body.split("\n\n"):
        lines = chunk.split("\n")
        if not any(lines):
            continue
        head, entries = lines[0], lines[1:]
        # `AclCommand` joins entries with "\n" after a leading " \t": normalise the ends.
        if entries:
            entries = [entries[0].removeprefix(" "), *entries[1:]]
            entries[-1] = entries[-1].removesuffix(" ")
        blocks.append([head, *sorted(entries)])
    return [headings, *sorted(blocks)]


def _run_sequence(tool: str, bootstrap: str) -> list[str]:
    outputs = []
    for args in COMMANDS:
        if tool == "kafka":
            done: subprocess.CompletedProcess[str] = run_kafka_tool(
                ACL_COMMAND, "--bootstrap-server", bootstrap, *args
            )
        else:
            done = run_franz_tool("acls", "--bootstrap-server", bootstrap, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        outputs.append(done.stdout)
    return outputs


def test_franz_acls_matches_kafka_acls(zk_chroot: str, tmp_path: Path) -> None:
    kafka = KafkaBroker(tmp_path / "kafka", zk_chroot, properties=AUTHORIZER).start()
    try:
        oracle = _run_sequence("kafka", kafka.bootstrap)
    finally:
        kafka.stop()
    with BrokerProcess(tmp_path / "franz-a", AUTHORIZER) as franz:
        kafka_tool_on_franz = _run_sequence("kafka", franz.bootstrap)
    with BrokerProcess(tmp_path / "franz-b", AUTHORIZER) as franz:
        franz_tool_on_franz = _run_sequence("franz", franz.bootstrap)
    for args, want, got_kafka_tool, got_franz_tool in zip(
        COMMANDS, oracle, kafka_tool_on_franz, franz_tool_on_franz, strict=True
    ):
        assert _normalized(got_kafka_tool) == _normalized(want), (args, want, got_kafka_tool)
        assert _normalized(got_franz_tool) == _normalized(want), (args, want, got_franz_tool)
    # The oracle did list what was added: the comparison is not between empty outputs.
    assert "name=kafka-cluster" in oracle[5] and "User:carol" in oracle[5]
