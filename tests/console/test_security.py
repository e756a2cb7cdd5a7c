"""ACLs (``/acls``) and SCRAM users (``/users``) in headless Chromium against a real broker
with an authorizer and SASL: the console connects as the super user ``admin`` over
SASL_PLAINTEXT (``--command-config``, PLAIN). What the pages list is what ``franz acls
--list`` and the AdminClient say; ACLs added and deleted in the UI are there or gone for the
tool; a SCRAM user added in the UI logs in with confluent-kafka, and no longer after its
password changed or it was deleted. Without an authorizer the page says so."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from selenium.webdriver.common.by import By
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.integration.sasl_support import PASSWORDS, command_config, librdkafka_config, sasl_broker
from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, screenshot, wait_until

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:admin",
}
_BLOCK = re.compile(r"resourceType=(\w+), name=(.*?), patternType=(\w+)\)`: \n(.*?)\n\n", re.DOTALL)
_ENTRY = re.compile(r"\(principal=(.*?), host=(.*?), operation=(\w+), permissionType=(\w+)\)")


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, Path]]:
    data = tmp_path_factory.mktemp("secured")
    with sasl_broker(data / "b", **AUTHORIZER) as broker:
        yield broker, command_config(data / "admin.properties")


@pytest.fixture(scope="module")
def secured_console(
    secured: tuple[BrokerProcess, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleProcess]:
    broker, config = secured
    with ConsoleProcess(
        broker.bootstrap, tmp_path_factory.mktemp("console"), "--command-config", str(config)
    ) as console:
        yield console


def _tool_acls(broker: BrokerProcess, config: Path) -> set[tuple[str, ...]]:
    """``franz acls --list`` as (principal, host, operation, permission, type, name, pattern)."""
    done = subprocess.run(
        [sys.executable, "-m", "franz", "acls", "--bootstrap-server", broker.bootstrap,
         "--command-config", str(config), "--list"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return {
        (*entry, rtype, name, ptype)
        for rtype, name, ptype, body in _BLOCK.findall(done.stdout)
        for entry in _ENTRY.findall(body)
    }


def _page_acls(browser: Any) -> set[tuple[str, ...]]:
    rows = browser.find_elements(By.CSS_SELECTOR, "#acls tr.acl")
    return {tuple(td.text for td in row.find_elements(By.TAG_NAME, "td")[:7]) for row in rows}


def _submit(browser: Any, form_id: str, fields: dict[str, str]) -> None:
    form = browser.find_element(By.ID, form_id)
    for name, value in fields.items():
        element = form.find_element(By.NAME, name)
        if element.tag_name == "select":
            Select(element).select_by_visible_text(value)
        else:
            element.clear()
            element.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(browser, 60).until(staleness_of(form))  # the redirect's page replaced it


def _confirm_click(browser: Any, css: str) -> None:
    """Click a destructive action's button, accept the confirmation, wait for the answer."""
    button = browser.find_element(By.CSS_SELECTOR, css)
    button.click()
    browser.switch_to.alert.accept()
    WebDriverWait(browser, 60).until(staleness_of(button))


def _banner(browser: Any, kind: str) -> str:
    return str(
        wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, f".banner.{kind}"))[0].text
    )


def test_acls_added_and_deleted_in_the_ui(
    secured: tuple[BrokerProcess, Path], secured_console: ConsoleProcess, browser: Any
) -> None:
    broker, config = secured
    browser.get(secured_console.url + "acls")
    assert browser.find_element(By.ID, "acl-count").text.startswith("0 ACL(s)")

    _submit(browser, "acl-add", {"principal": "User:alice", "operation": "WRITE",
                                 "resource_type": "TOPIC", "name": "orders"})  # fmt: skip
    assert "Added ALLOW WRITE for User:alice" in _banner(browser, "ok")
    _submit(browser, "acl-add", {"principal": "User:bob", "permission": "DENY",
                                 "operation": "READ", "resource_type": "GROUP",
                                 "name": "billing-", "pattern_type": "PREFIXED"})  # fmt: skip
    assert "Added DENY READ for User:bob" in _banner(browser, "ok")
    _submit(browser, "acl-add", {"principal": "User:alice", "operation": "IDEMPOTENT_WRITE",
                                 "resource_type": "CLUSTER"})  # fmt: skip
    _banner(browser, "ok")

    expected = {
        ("User:alice", "*", "WRITE", "ALLOW", "TOPIC", "orders", "LITERAL"),
        ("User:bob", "*", "READ", "DENY", "GROUP", "billing-", "PREFIXED"),
        ("User:alice", "*", "IDEMPOTENT_WRITE", "ALLOW", "CLUSTER", "kafka-cluster", "LITERAL"),
    }
    assert _tool_acls(broker, config) == expected
    assert _page_acls(browser) == expected
    groups = browser.find_elements(By.CSS_SELECTOR, "#acls tbody.resource")
    # One group per resource pattern, in the tool's order (TOPIC, GROUP, CLUSTER).
    assert [g.get_attribute("data-resource") for g in groups] == [
        "TOPIC:orders:LITERAL", "GROUP:billing-:PREFIXED", "CLUSTER:kafka-cluster:LITERAL",
    ]  # fmt: skip
    screenshot(browser, "acls")

    _confirm_click(
        browser, "#acls tr.acl[data-principal='User:alice'][data-operation='WRITE'] button.danger"
    )
    assert "Deleted 1 ACL(s) of User:alice" in _banner(browser, "ok")
    expected.remove(("User:alice", "*", "WRITE", "ALLOW", "TOPIC", "orders", "LITERAL"))
    assert _tool_acls(broker, config) == expected
    assert _page_acls(browser) == expected

    # A dismissed confirmation deletes nothing.
    browser.find_element(By.CSS_SELECTOR, "#acls tr.acl button.danger").click()
    browser.switch_to.alert.dismiss()
    assert _tool_acls(broker, config) == expected

    # An invalid form is an error banner, not a traceback.
    _submit(browser, "acl-add", {"principal": "alice", "operation": "READ", "name": "t"})
    assert "INVALID_REQUEST" in _banner(browser, "error")


def test_without_an_authorizer_the_acl_page_says_so(console: ConsoleProcess, browser: Any) -> None:
    browser.get(console.url + "acls")
    assert "No authorizer configured" in browser.find_element(By.ID, "acls-disabled").text


def _can_login(broker: BrokerProcess, mechanism: str, user: str, password: str) -> bool:
    admin = AdminClient(
        {**librdkafka_config(broker.bootstrap, mechanism, user, password), "log_level": 0}
    )
    try:
        admin.list_topics(timeout=10)
    except KafkaException:
        return False
    return True


def test_scram_users_added_changed_and_deleted_in_the_ui(
    secured: tuple[BrokerProcess, Path], secured_console: ConsoleProcess, browser: Any
) -> None:
    broker, _ = secured
    admin = AdminClient(librdkafka_config(broker.bootstrap, "PLAIN", "admin", PASSWORDS["admin"]))
    browser.get(secured_console.url + "users")
    assert browser.find_elements(By.CSS_SELECTOR, "#users tr.user") == []

    first = {"user": "carol", "password": "carol-secret-1", "mechanism": "SCRAM-SHA-512"}
    _submit(browser, "user-upsert", {**first, "iterations": "8192"})
    assert "Set the SCRAM-SHA-512 credential of carol" in _banner(browser, "ok")
    _submit(browser, "user-upsert", {"user": "carol", "password": "carol-secret-1",
                                     "mechanism": "SCRAM-SHA-256"})  # fmt: skip
    _banner(browser, "ok")
    badges = browser.find_elements(By.CSS_SELECTOR, "#users tr[data-user='carol'] [data-mechanism]")
    shown = sorted((b.get_attribute("data-mechanism"), int(b.get_attribute("data-iterations")))
                   for b in badges)  # fmt: skip
    by_user: Any = admin.describe_user_scram_credentials(["carol"])
    described = by_user["carol"].result(30)
    assert shown == sorted(
        (i.mechanism.name.replace("_", "-"), i.iterations) for i in described.scram_credential_infos
    )
    assert shown == [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)]
    screenshot(browser, "users")
    assert _can_login(broker, "SCRAM-SHA-512", "carol", "carol-secret-1")
    assert not _can_login(broker, "SCRAM-SHA-512", "carol", "wrong")

    _submit(browser, "user-upsert", {**first, "password": "carol-secret-2", "iterations": "8192"})
    _banner(browser, "ok")
    assert _can_login(broker, "SCRAM-SHA-512", "carol", "carol-secret-2")
    assert not _can_login(broker, "SCRAM-SHA-512", "carol", "carol-secret-1")

    _confirm_click(browser, "#users tr[data-user='carol'] button.danger")
    assert "Deleted user carol" in _banner(browser, "ok")
    assert browser.find_elements(By.CSS_SELECTOR, "#users tr.user") == []
    everyone: Any = admin.describe_user_scram_credentials()
    assert everyone.result(30) == {}
    assert not _can_login(broker, "SCRAM-SHA-256", "carol", "carol-secret-2")

    # The passwords went to the broker only: not into a page, a URL or the console's output.
    assert "carol-secret" not in browser.page_source + browser.current_url
    assert "carol-secret" not in secured_console.output()


@pytest.fixture
def alice_console(secured: tuple[BrokerProcess, Path], tmp_path: Path) -> Iterator[ConsoleProcess]:
    """A console acting as alice (PLAIN; no ACLs, not a super user)."""
    broker, _ = secured
    config = command_config(tmp_path / "alice.properties", "PLAIN", "alice")
    with ConsoleProcess(broker.bootstrap, tmp_path, "--command-config", str(config)) as console:
        yield console


def _refused(browser: Any, url: str) -> None:
    browser.get(url)
    banner = browser.find_element(By.CSS_SELECTOR, ".banner.error").text
    assert "CLUSTER_AUTHORIZATION_FAILED" in banner, banner
    assert "Traceback" not in browser.page_source


def test_a_principal_without_rights_sees_kafkas_error_on_the_acl_page(
    alice_console: ConsoleProcess, browser: Any
) -> None:
    """DescribeAcls needs DESCRIBE on the cluster: the page shows the broker's refusal."""
    _refused(browser, alice_console.url + "acls")


def test_a_principal_without_rights_sees_kafkas_error_on_the_users_page(
    alice_console: ConsoleProcess, browser: Any
) -> None:
    _refused(browser, alice_console.url + "users")
