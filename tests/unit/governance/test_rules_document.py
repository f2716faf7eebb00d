"""Central rules without sockets: set a key, diff, validate, commit, and apply in an instance."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from modelyard.clock import FakeClock
from modelyard.discovery.rules_store import RulesConflict, RulesRevision, RulesStore
from modelyard.errors import ConfigError, GovernanceError
from modelyard.governance.guard import Call
from modelyard.governance.rules_document import (
    commit_change,
    dump_rules,
    load_rules,
    parse_value,
    rules_diff,
    set_key,
    validate_rules,
)
from modelyard.governance.runtime import Governance, RulesSource
from modelyard.governance.service_config import empty_service_config, parse_service_config

SERVICE = "com.example.test.rules"


class MemoryRulesStore(RulesStore):
    """The RulesStore contract in a dict; ``race`` lets another writer win the next put."""

    def __init__(self) -> None:
        self.revisions: dict[int, RulesRevision] = {}
        self.race: RulesRevision | None = None

    async def get(self, service: str, revision: int | None = None) -> RulesRevision | None:
        if revision is None:
            revision = max(self.revisions, default=0)
        return self.revisions.get(revision)

    async def put(self, revision: RulesRevision) -> None:
        if self.race is not None:
            self.revisions[self.race.revision] = self.race
            self.race = None
        found = max(self.revisions, default=0)
        if found != revision.revision - 1:
            raise RulesConflict(revision.service, revision.revision - 1, found)
        self.revisions[revision.revision] = revision

    async def history(self, service: str, limit: int | None = None) -> list[RulesRevision]:
        return [self.revisions[r] for r in sorted(self.revisions, reverse=True)][:limit]

    async def watch(self, service: str, since_revision: int) -> AsyncIterator[RulesRevision]:
        for number in sorted(self.revisions):  # what is stored now; these tests never wait
            if number > since_revision:
                yield self.revisions[number]


def revision(number: int, document: str) -> RulesRevision:
    return RulesRevision(SERVICE, number, document, "alice@host", 1000.0 + number, "test", "")


# ---- set-key and values ---------------------------------------------------------


def test_set_key_makes_mappings_on_the_way_and_leaves_the_input_alone() -> None:
    before = {"limits": {"infer": {"instance_qps": 10}}}
    after = set_key(before, "limits.infer.cluster_qps", 200)
    assert after == {"limits": {"infer": {"instance_qps": 10, "cluster_qps": 200}}}
    assert before == {"limits": {"infer": {"instance_qps": 10}}}
    assert set_key({}, "breakers.slow.threshold", 0.5) == {"breakers": {"slow": {"threshold": 0.5}}}


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("auth.enabled", "auth stays in each instance's local service file"),
        ("service", "is not a central rule"),
        ("limits..cluster_qps", "has an empty part"),
        ("limits.infer.instance_qps.deeper", "limits.infer.instance_qps is 10, not a mapping"),
    ],
)
def test_set_key_refuses_keys_outside_the_rules(key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as refused:
        set_key({"limits": {"infer": {"instance_qps": 10}}}, key, 1)
    assert fragment in refused.value.line()


def test_values_are_yaml() -> None:
    assert parse_value("200") == 200
    assert parse_value("0.5") == 0.5
    assert parse_value("{reserved_qps: 40}") == {"reserved_qps": 40}
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_value("{unclosed")


# ---- canonical form and diff ---------------------------------------------------


def test_documents_have_one_canonical_form_and_diffs_show_only_the_change() -> None:
    old = dump_rules({"limits": {"infer": {"cluster_qps": 100, "burst_seconds": 1}}})
    new = dump_rules(set_key(load_rules(old), "limits.infer.cluster_qps", 200))
    assert load_rules(new) == {"limits": {"infer": {"cluster_qps": 200, "burst_seconds": 1}}}
    diff = rules_diff(old, new, "central:x@r1", "central:x@r2")
    assert diff.startswith("--- central:x@r1\n+++ central:x@r2\n")
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    assert changed == ["-    cluster_qps: 100", "+    cluster_qps: 200"]
    assert dump_rules({}) == "{}\n" and load_rules("{}\n") == {}


# ---- validation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        (
            "limits:\n  infer:\n    cluster_qps: -5\n",
            "f:3 at limits.infer.cluster_qps: must be a positive",
        ),
        ("limits:\n  infer:\n    cluster_qps: 5\n", "cluster_qps needs cluster.redis_url"),
        ("auth:\n  enabled: false\n", "f:1 at auth: auth stays in each instance's local"),
        ("service: com.example.other\n", "these are the rules of 'com.example.other'"),
        ("interfaces:\n  infer: [ranker]\n", "f:2 at interfaces.infer: 'infer' is a protocol"),
        ("limits:\n  rank:\n    instance_qps: 5\n", "unknown interface 'rank' (known: infer,"),
        ("interfaces:\n  rank: {models: []}\n", "f:2 at interfaces.rank.models: expected at least"),
        (
            "limits:\n  infer:\n    instance_qps: 10\n    models: {a: {reserved_qps: 20}}\n",
            "reserved shares add up to 20/s, over instance_qps 10/s",
        ),
        (
            "breakers:\n  b: {interface: infer, kind: error_ratio, threshold: 2}\n",
            "f:2 at breakers.b.threshold",
        ),
        ("breakers:\n  b: {interface: infer, colour: red}\n", "breaker rule field 'colour'"),
        ("limits:\n  infer:\n    instance_qps: 0.5\n", "holds 0.5 calls, less than one"),
    ],
)
def test_validation_names_the_line_and_key_of_a_bad_value(document: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as refused:
        validate_rules(SERVICE, document, "f")
    assert fragment in refused.value.line()


def test_a_valid_document_builds_as_the_instances_will() -> None:
    config = validate_rules(
        SERVICE,
        "limits:\n  infer:\n    instance_qps: 10\ncluster: {redis_url: 'redis://h:1/0'}\n",
        "central:x@r1",
    )
    assert config.service == SERVICE
    assert config.limits == {"infer": {"instance_qps": 10}}
    rows = {row["rule"]: row for row in config.rules()}
    assert rows["limits.infer.instance_qps"]["set_at"] == "central:x@r1:3"


# ---- commit --------------------------------------------------------------------


def test_commit_stores_whole_revisions_with_author_time_and_diff() -> None:
    store = MemoryRulesStore()
    clock = FakeClock(start=5000.0)

    async def go() -> None:
        before, first = await commit_change(
            store,
            SERVICE,
            lambda d: set_key(d, "limits.infer.instance_qps", 10),
            author="alice@host",
            action="set limits.infer.instance_qps 10",
            clock=clock,
        )
        assert before is None and first is not None
        assert (first.revision, first.author, first.time) == (1, "alice@host", 5000.0)
        assert "+    instance_qps: 10" in first.diff
        _, second = await commit_change(
            store, SERVICE, lambda d: set_key(d, "limits.infer.instance_qps", 20), author="bob",
            action="set", clock=clock,
        )  # fmt: skip
        assert second is not None and second.revision == 2
        assert "-    instance_qps: 10\n+    instance_qps: 20" in second.diff
        same, none = await commit_change(
            store, SERVICE, lambda d: set_key(d, "limits.infer.instance_qps", 20), author="bob",
            action="set",
        )  # fmt: skip
        assert none is None and same == second

    asyncio.run(go())
    assert sorted(store.revisions) == [1, 2]


def test_an_invalid_change_stores_nothing() -> None:
    store = MemoryRulesStore()
    store.revisions[1] = revision(1, "limits:\n  infer:\n    instance_qps: 10\n")

    async def go() -> None:
        await commit_change(
            store, SERVICE, lambda d: set_key(d, "limits.infer.instance_qps", -1), author="a",
            action="set",
        )  # fmt: skip

    with pytest.raises(ConfigError) as refused:
        asyncio.run(go())
    assert f"central:{SERVICE}@r2:3 at limits.infer.instance_qps" in refused.value.line()
    assert list(store.revisions) == [1]


def test_a_lost_race_is_recomputed_on_the_winner() -> None:
    store = MemoryRulesStore()
    store.revisions[1] = revision(1, "limits:\n  infer:\n    instance_qps: 10\n")
    # another writer stores revision 2 (a breaker) between our read and our put
    store.race = revision(
        2,
        "limits:\n  infer:\n    instance_qps: 10\nbreakers:\n"
        "  b: {interface: infer, kind: error_count, threshold: 3}\n",
    )

    async def go() -> RulesRevision | None:
        _, stored = await commit_change(
            store, SERVICE, lambda d: set_key(d, "limits.infer.instance_qps", 30), author="a",
            action="set",
        )  # fmt: skip
        return stored

    stored = asyncio.run(go())
    assert stored is not None and stored.revision == 3
    assert (
        load_rules(stored.document)["breakers"]["b"]["threshold"] == 3
    )  # the winner's change kept
    assert load_rules(stored.document)["limits"]["infer"]["instance_qps"] == 30
    assert stored.diff.startswith(f"--- central:{SERVICE}@r2\n")


# ---- an instance applying central revisions --------------------------------------

LOCAL = f"""\
service: {SERVICE}
auth:
  enabled: false
limits:
  infer:
    instance_qps: 1000
"""


def limit_of(governance: Governance) -> object:
    return governance.config.limits.get("infer", {}).get("instance_qps")


def test_auto_enforces_the_local_file_until_central_rules_exist_then_those() -> None:
    async def go() -> None:
        governance = Governance(
            parse_service_config(LOCAL), rules_source=RulesSource.AUTO, clock=FakeClock()
        )
        assert governance.in_force == "none" and limit_of(governance) == 1000
        assert await governance.apply_central(revision(1, "limits: {infer: {instance_qps: 5}}\n"))
        assert governance.in_force == "central" and limit_of(governance) == 5
        rules = governance.rules()
        assert rules["revision"] == 1 and rules["source"] == f"central:{SERVICE}@r1"
        assert rules["rules_source"]["central"]["digest"].startswith("sha256:")
        # an older or repeated revision changes nothing
        assert not await governance.apply_central(revision(1, "{}\n"))
        await governance.aclose()

    asyncio.run(go())


def test_local_ignores_central_rules_and_central_ignores_the_local_rules() -> None:
    async def go() -> None:
        local = Governance(parse_service_config(LOCAL), rules_source=RulesSource.LOCAL)
        assert not await local.apply_central(revision(1, "limits: {infer: {instance_qps: 5}}\n"))
        assert limit_of(local) == 1000 and local.in_force == "none"
        central = Governance(parse_service_config(LOCAL), rules_source=RulesSource.CENTRAL)
        assert central.in_force == "central" and central.config.limits == {}
        assert central.config.auth.enabled is False  # auth stays local
        await local.aclose()
        await central.aclose()

    asyncio.run(go())


def test_a_stored_revision_that_fails_to_build_keeps_the_rules_in_force() -> None:
    async def go() -> None:
        governance = Governance(empty_service_config(SERVICE), rules_source=RulesSource.AUTO)
        assert await governance.apply_central(revision(1, "limits: {infer: {instance_qps: 5}}\n"))
        # e.g. written by an older client that did not validate: cluster_qps without Redis
        assert not await governance.apply_central(
            revision(2, "limits: {infer: {cluster_qps: 5}}\n")
        )
        assert limit_of(governance) == 5
        assert governance.rules()["revision"] == 1
        assert governance.rules()["rules_source"]["rejected_revision"] == 2
        await governance.aclose()

    asyncio.run(go())


def test_rejections_are_recorded_with_the_rule_and_revision_in_force() -> None:
    async def go() -> None:
        clock = FakeClock()
        governance = Governance(
            empty_service_config(SERVICE), rules_source=RulesSource.AUTO, clock=clock
        )
        await governance.apply_central(revision(4, "limits: {infer: {instance_qps: 1}}\n"))

        async def ok() -> str:
            return "ok"

        await governance.guard(Call(SERVICE, "infer", "m", request_id="first"), ok)
        with pytest.raises(GovernanceError):
            await governance.guard(Call(SERVICE, "infer", "m", request_id="second"), ok)
        event = governance.rejection("second")
        assert event["rule"] == "ratelimit/instance-qps"
        assert event["setting"] == {"key": "limits.infer.instance_qps", "value": 1}
        assert event["rules_revision"] == 4 and event["time"] == clock.now
        assert f"central:{SERVICE}@r4" in event["line"]
        await governance.aclose()

    asyncio.run(go())


def test_decisions_are_counted_across_rule_changes_not_from_zero_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("modelyard.governance.runtime._RETIRE_AFTER", 0.01)

    async def go() -> None:
        clock = FakeClock()
        governance = Governance(
            empty_service_config(SERVICE), rules_source=RulesSource.AUTO, clock=clock
        )
        started = governance.counted_since
        await governance.apply_central(revision(1, "limits: {infer: {instance_qps: 1}}\n"))

        async def ok() -> str:
            return "ok"

        await governance.guard(Call(SERVICE, "infer", "m"), ok)
        with pytest.raises(GovernanceError):
            await governance.guard(Call(SERVICE, "infer", "m"), ok)
        await governance.apply_central(revision(2, "limits: {infer: {instance_qps: 2}}\n"))
        await governance.guard(Call(SERVICE, "infer", "m"), ok)
        expected = {
            "admitted": {"infer": 2},
            "rejected": {"infer": {"ratelimit/instance-qps": 1}},
            "rejections_total": 1,
            "counted_since": started,
        }
        stats = governance.live_stats()
        assert {key: stats[key] for key in expected} == expected
        await asyncio.sleep(0.1)  # the replaced chains are closed: what they counted stays
        stats = governance.live_stats()
        assert {key: stats[key] for key in expected} == expected
        await governance.aclose()

    asyncio.run(go())
