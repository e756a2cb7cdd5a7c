"""Issue 15, item 2: differential protocol tests against Apache Kafka 3.9.

Each scenario of ``tests/support/differential_scenarios.py`` runs at each version both
brokers serve, once against the session's Kafka and once against this module's Franz broker
(one connection each); the decoded answers must be equal field by field except for
``MAY_DIFFER`` (by construction) and ``JUSTIFIED_DIFFERENCES`` (deliberate, with reasons).
The README's table is generated from the same definitions (``tools/gen_differential_table.py``)
and checked here.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from tests.support.broker import BrokerProcess
from tests.support.differential import (
    KAFKA_ONLY_APIS,
    KAFKA_RANGES,
    Scenario,
    Session,
    Step,
    compare,
)
from tests.support.differential_scenarios import scenario_cases, warm_up
from tests.support.kafka_ref import KafkaBroker
from tools.gen_differential_table import README, render_table, replace_table

#: The session Kafka's ``server.properties`` settings (``KafkaBroker``), so that configs
#: described on both brokers come from the same layer.
SAME_AS_KAFKA = {
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


#: The module's Franz broker (``franz`` in conftest) runs with Kafka's test settings.
FRANZ_SETTINGS = SAME_AS_KAFKA


@pytest.fixture(scope="module")
def warm(kafka: KafkaBroker, franz: BrokerProcess) -> None:
    """Both brokers with their internal topics loaded (Kafka creates ``__consumer_offsets``
    and ``__transaction_state`` on first use and answers COORDINATOR_NOT_AVAILABLE /
    COORDINATOR_LOAD_IN_PROGRESS meanwhile): scenarios then start from the same state."""
    for broker in (kafka, franz):
        with Session(broker.bootstrap, "warm-up", 0) as session:
            warm_up(session)


def test_kafka_advertises_the_recorded_ranges(kafka: KafkaBroker) -> None:
    with Session(kafka.bootstrap, "ranges", 0) as session:
        response = session.call(
            ApiKey.API_VERSIONS,
            3,
            {"client_software_name": "franz-differential", "client_software_version": "1.0"},
        )
    served = {int(k.api_key): (k.min_version, k.max_version) for k in response.api_keys}
    assert {api: served.get(int(api)) for api in SUPPORTED_APIS} == KAFKA_RANGES
    assert served.keys() - set(map(int, SUPPORTED_APIS)) == KAFKA_ONLY_APIS.keys()


@pytest.mark.parametrize(
    ("scenario", "version"),
    scenario_cases(),
    ids=[f"{sc.name}-v{v}" for sc, v in scenario_cases()],
)
def test_same_answers(
    scenario: Scenario, version: int, kafka: KafkaBroker, franz: BrokerProcess, warm: None
) -> None:
    def run(bootstrap: str) -> list[Step]:
        with Session(bootstrap, scenario.name, version) as session:
            scenario.run(session, version)
        return session.transcript

    # Both brokers at once: they share nothing, and the case takes the slower one's time.
    with ThreadPoolExecutor(2) as pool:
        on_kafka, on_franz = pool.map(run, (kafka.bootstrap, franz.bootstrap))
    problems = compare(scenario.name, on_kafka, on_franz)
    assert not problems, "\n".join(problems)


def test_readme_table_is_current() -> None:
    assert replace_table(README.read_text(), render_table()) == README.read_text(), (
        "README.md's differential table is stale: run python -m tools.gen_differential_table"
    )
