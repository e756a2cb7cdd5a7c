"""Client quotas in the embedded metadata file (franz.metadata.local,
franz.metadata.client_quota_store.LocalClientQuotaStore)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from franz.metadata.client_quota_store import LocalClientQuotaStore
from franz.metadata.local import LocalMetadataStore
from franz.security.client_quota import DEFAULT_ENTITY, QuotaEntity


def test_quotas_persist_and_keep_other_keys(tmp_path: Path) -> None:
    local = LocalMetadataStore(tmp_path)
    local.load()
    store = LocalClientQuotaStore(local)
    alice_x = QuotaEntity("alice", "x y")
    asyncio.run(store.alter(alice_x, {"producer_byte_rate": "1024", "other": "kept"}))
    asyncio.run(store.alter(QuotaEntity(None, DEFAULT_ENTITY), {"consumer_byte_rate": "5"}))
    asyncio.run(store.alter(alice_x, {"producer_byte_rate": None}))
    on_disk = json.loads((tmp_path / "franz-metadata.json").read_text())
    assert on_disk["client_quotas"] == {
        "users/alice/clients/x%20y": {"other": "kept"},
        "clients/<default>": {"consumer_byte_rate": "5"},
    }
    reloaded = LocalMetadataStore(tmp_path)
    reloaded.load()
    assert asyncio.run(LocalClientQuotaStore(reloaded).all_entity_configs()) == {
        alice_x: {"other": "kept"},
        QuotaEntity(None, DEFAULT_ENTITY): {"consumer_byte_rate": "5"},
    }


def test_an_entity_left_empty_is_removed(tmp_path: Path) -> None:
    local = LocalMetadataStore(tmp_path)
    local.load()
    store = LocalClientQuotaStore(local)
    asyncio.run(store.alter(QuotaEntity("u", None), {"request_percentage": "50.0"}))
    asyncio.run(store.alter(QuotaEntity("u", None), {"request_percentage": None}))
    assert "client_quotas" not in json.loads((tmp_path / "franz-metadata.json").read_text())
    assert asyncio.run(store.entity_configs(QuotaEntity("u", None))) == {}
