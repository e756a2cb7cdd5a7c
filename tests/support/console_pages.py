"""Helpers of the console's page tests (``tests/console``): submit a form and wait for the
next page (accepting its ``data-confirm`` dialog), read the ``#done`` / ``#error`` banner,
fill a form's fields, read a table's rows by their ``data-`` attributes, and the
watermarks of a topic's partitions from confluent-kafka's AdminClient (ListOffsets)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

from tests.support.console import wait_until

__all__ = ["alert", "banner", "fill", "rows", "submit", "watermarks"]


def watermarks(admin: AdminClient, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    """partition -> (log start offset, high watermark), from ListOffsets earliest/latest."""

    def ask(spec: Any) -> dict[int, int]:
        tps = {TopicPartition(topic, p): spec for p in range(partitions)}
        return {tp.partition: f.result(30).offset for tp, f in admin.list_offsets(tps).items()}

    low = ask(OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    high = ask(OffsetSpec.latest())  # type: ignore[no-untyped-call]
    return {p: (low[p], high[p]) for p in range(partitions)}


def submit(browser: Any, css: str, *, confirm: bool = False) -> None:
    """Click ``css`` (a form's button), accept the confirm dialog if asked, and wait for
    the next page."""
    browser.execute_script("document.body.dataset.before = '1'")
    browser.find_element(By.CSS_SELECTOR, css).click()
    if confirm:
        wait_until(lambda: alert(browser), timeout=10).accept()
    wait_until(
        lambda: browser.execute_script(
            "return document.readyState === 'complete' && !document.body.dataset.before"
        )
    )


def alert(browser: Any) -> Any:
    try:
        return browser.switch_to.alert
    except Exception:
        return None


def banner(browser: Any, kind: str) -> str:
    """The text of the page's ``#done`` or ``#error`` banner."""

    def text() -> str:
        try:
            found = browser.find_elements(By.ID, kind)
            return found[0].text if found else ""
        except StaleElementReferenceException:
            return ""

    return str(wait_until(text, timeout=10))


def fill(browser: Any, form: str, **fields: str) -> None:
    for name, value in fields.items():
        element = browser.find_element(By.CSS_SELECTOR, f"#{form} [name='{name}']")
        if element.tag_name == "select":
            element.find_element(By.CSS_SELECTOR, f"option[value='{value}']").click()
        else:
            element.clear()
            element.send_keys(value)


def rows(browser: Any, table: str, key: str) -> dict[str, dict[str, str]]:
    """``{data-<key>: {attribute: value}}`` of the table's rows' data- attributes."""
    found = browser.execute_script(
        """return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr[data-' +
        arguments[1] + ']')).map(tr => Object.assign({}, tr.dataset))""",
        f"#{table}",
        key,
    )
    return {row[key]: row for row in found}
