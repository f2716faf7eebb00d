"""Copies of models across a group with residency: the hot ones everywhere, within budgets."""

from __future__ import annotations

import itertools

import numpy as np

from modelyard.control.placement import (
    COOL_SHARE,
    HOT_SHARE,
    RENEW_S,
    WINDOW_S,
    RequestWindow,
    ResidentInstance,
    by_group,
    copies,
    copies_to_drop,
    copies_to_make,
    group_hot_models,
    hot_models,
    renewals_due,
)
from modelyard.server.residency import PLACED_S

MB = 1 << 20


def instance(
    name: str,
    resident: dict[str, int],
    known: tuple[str, ...] = (),
    requests: dict[str, int] | None = None,
    pinned: tuple[str, ...] = (),
    budget: int = 100 * MB,
) -> ResidentInstance:
    models = {m: {"resident": True, "bytes": b} for m, b in resident.items()}
    models.update({m: {"resident": False, "bytes": 0} for m in known if m not in resident})
    for model, count in (requests or {}).items():
        models.setdefault(model, {"resident": False, "bytes": 0})["requests"] = count
    for model in pinned:
        models[model]["pinned"] = True
    stats = {
        "instance": {
            "residency": {
                "budget_bytes": budget,
                "held_bytes": sum(resident.values()),
                "models": models,
            }
        }
    }
    found = ResidentInstance.from_stats(name, "svc", "g", f"{name}:8000", stats)
    assert found is not None
    return found


def test_the_busiest_models_are_hot_while_they_fit_in_half_the_budget() -> None:
    rates = {"a": 50.0, "b": 20.0, "c": 10.0, "d": 0.0}
    sizes = {"a": 20 * MB, "b": 40 * MB, "c": 20 * MB}
    # within 50 MB: a (20), then b (40) does not fit beside it and c (20) does; d is not
    # asked for at all
    assert hot_models(rates, sizes, 100 * MB) == ["a", "c"]
    assert hot_models({"a": 5.0}, {"a": 80 * MB}, 100 * MB) == []  # too big to copy
    assert hot_models({"x": 1.0}, {}, 100 * MB) == ["x"]  # unknown size: counts as nothing
    assert hot_models({}, {}, 100 * MB) == []


def test_a_model_becomes_hot_at_its_share_and_stays_hot_until_half_of_it() -> None:
    # 100 requests a second: a at 60 %, b at the line, c between the lines, d under both
    between = (HOT_SHARE + COOL_SHARE) / 2 * 100
    rates = {"a": 60.0, "b": HOT_SHARE * 100, "c": between, "d": COOL_SHARE * 100 * 0.9}
    rates["rest"] = 100 - sum(rates.values())
    sizes = dict.fromkeys(rates, MB) | {"rest": 90 * MB}  # the rest (many models) never fits
    assert hot_models(rates, sizes, 100 * MB) == ["a", "b"]
    # hot now: c and d were hot; c draws enough to stay, d does not
    assert hot_models(rates, sizes, 100 * MB, hot_now={"a", "c", "d"}) == ["a", "b", "c"]


def test_a_models_footprint_is_the_median_of_what_the_instances_measured() -> None:
    # one instance measured a's load beside busy requests: 60 MB, past half the budget
    group = [
        instance("i1", {"a": 10 * MB}),
        instance("i2", {"a": 12 * MB}),
        instance("i3", {"a": 60 * MB}),
    ]
    assert group_hot_models(group, {"a": 10.0}) == ["a"]
    assert group_hot_models(group[2:], {"a": 10.0}) == []


def test_the_window_counts_each_models_requests_over_its_last_seconds() -> None:
    window = RequestWindow(seconds=5.0)
    counts = {"i1": {"a": 0, "b": 0}, "i2": {"a": 0, "b": 0}}

    def poll(at: float) -> None:
        window.observe([instance(n, {}, requests=dict(c)) for n, c in counts.items()], at)

    poll(0.0)  # what the counts start from
    assert window.rates() == {}
    for second in range(1, 11):  # a: 10 a second on i1 and 10 on i2; b: 4 on i2
        counts["i1"]["a"] += 10
        counts["i2"]["a"] += 10
        counts["i2"]["b"] += 4
        poll(float(second))
    assert window.rates() == {"a": 20.0, "b": 4.0}
    assert window.rates("i2") == {"a": 10.0, "b": 4.0}
    for second in range(11, 14):  # a is asked for no more: 3 s of the 5 without it
        counts["i2"]["b"] += 4
        poll(float(second))
    assert window.rates() == {"a": 8.0, "b": 4.0}
    counts["i1"] = {"a": 3, "b": 0}  # i1 started again: its counts start over, none negative
    poll(14.0)
    assert window.rates()["a"] == 20 / WINDOW_S


def test_each_instance_that_lacks_a_hot_model_loads_all_it_lacks_busiest_first() -> None:
    known = ("a", "b", "c")
    group = [
        instance("i1", {"a": 10 * MB, "b": 10 * MB}, known),
        instance("i2", {"a": 10 * MB}, known),
        instance("i3", {}, known),
    ]
    loads = [(i.name, model) for i, model in copies_to_make(group, ["a", "b", "c"])]
    assert loads == [("i1", "c"), ("i2", "b"), ("i2", "c"), ("i3", "a"), ("i3", "b"), ("i3", "c")]
    assert copies(group) == {"a": ["i1", "i2"], "b": ["i1"]}


def test_a_model_an_instance_does_not_serve_is_never_sent_to_it() -> None:
    group = [instance("i1", {"a": 10 * MB}, ("a",)), instance("i2", {}, ("b",))]
    loads = [(i.name, model) for i, model in copies_to_make(group, ["a", "b"])]
    assert loads == [("i2", "b")]  # i1 does not serve b, nor i2 a


def test_instances_are_grouped_by_service_and_group() -> None:
    grouped = by_group([instance("i1", {}), instance("i2", {})])
    assert list(grouped) == [("svc", "g")] and len(grouped[("svc", "g")]) == 2


def test_an_instance_without_residency_is_not_one() -> None:
    assert ResidentInstance.from_stats("i", "s", "g", "h", {"instance": {}}) is None


def test_a_hot_copy_is_loaded_again_every_renewal_while_it_stays_hot() -> None:
    known = ("a", "b")
    group = [instance("i1", {"a": 10 * MB, "b": 10 * MB}, known), instance("i2", {"a": 10 * MB})]
    placed_at = {("i1", "a"): 100.0}  # b is not hot: never renewed
    due = [(i.name, m) for i, m in renewals_due(group, ["a"], placed_at, 100.0 + RENEW_S / 2)]
    assert due == [("i2", "a")]  # i1's copy was placed a moment ago; i2's never by the plane
    due = [(i.name, m) for i, m in renewals_due(group, ["a"], placed_at, 100.0 + RENEW_S)]
    assert due == [("i1", "a"), ("i2", "a")]


def test_a_model_no_longer_hot_keeps_one_copy_the_one_callers_made() -> None:
    group = [
        instance("i1", {"a": MB, "b": MB, "c": MB}),
        instance("i2", {"a": MB, "b": MB, "c": MB}),
        instance("i3", {"a": MB, "b": MB, "c": MB}, pinned=("c",)),
    ]
    # a: i1's copy callers made (rendezvous), i2's and i3's the plane placed; b: all three
    # placed, i3's asked for most; c: pinned on i3, placed on i1 and i2
    placed_at = {(n, m): 0.0 for n in ("i1", "i2", "i3") for m in ("a", "b", "c")}
    del placed_at[("i1", "a")]
    window = RequestWindow()
    window.observe([instance(n, {}, requests={"b": 0}) for n in ("i1", "i2", "i3")], 0.0)
    asked = {"i1": 1, "i2": 2, "i3": 5}
    window.observe([instance(n, {}, requests={"b": c}) for n, c in asked.items()], 1.0)
    drops = sorted((i.name, m) for i, m in copies_to_drop(group, [], placed_at, window))
    assert drops == [("i1", "b"), ("i1", "c"), ("i2", "a"), ("i2", "b"), ("i2", "c"), ("i3", "a")]
    # a hot model keeps its copies; a copy callers made is never the plane's to drop
    assert copies_to_drop(group, ["a", "b", "c"], placed_at, window) == []
    assert copies_to_drop(group, [], {}, window) == []


class FakeGroup:
    """Three instances whose requests are drawn by a law over the models each second, each
    request sent to a copy (in turn) or where callers would load it (rendezvous: a hash of
    its name); the plane's round applied as the plane applies it."""

    def __init__(self, sizes: dict[str, int], budget: int) -> None:
        self.sizes, self.budget = sizes, budget
        self.names = ["i1", "i2", "i3"]
        self.held: dict[str, set[str]] = {n: set() for n in self.names}
        self.asked: dict[str, dict[str, int]] = {n: dict.fromkeys(sizes, 0) for n in self.names}
        self.window = RequestWindow()
        self.placed_at: dict[tuple[str, str], float] = {}  # the plane's
        self.loaded_by_plane: dict[tuple[str, str], float] = {}  # the instances' (PLACED_S)
        self.now = 0.0
        self.hot: list[str] = []
        self.copies_made = 0
        self.sent = 0

    def members(self) -> list[ResidentInstance]:
        return [
            instance(
                n,
                {m: self.sizes[m] for m in self.held[n]},
                tuple(self.sizes),
                self.asked[n],
                budget=self.budget,
            )
            for n in self.names
        ]

    def serve(self, counts: dict[str, int]) -> None:
        for model, count in counts.items():
            holders = [n for n in self.names if model in self.held[n]]
            if not holders and count:  # loaded where callers send it (rendezvous)
                holders = [self.names[sum(map(ord, model)) % 3]]
                self.held[holders[0]].add(model)
                self._fit(holders[0], model)
            for _ in range(count):  # spread over its copies
                self.sent += 1
                self.asked[holders[self.sent % len(holders)]][model] += 1

    def _fit(self, name: str, loaded: str) -> None:
        """The instance's own policy: the least asked for goes first, a copy the plane
        loaded in the last PLACED_S only when no other will do, never the one loaded."""
        while sum(self.sizes[m] for m in self.held[name]) > self.budget:
            since = {m: self.loaded_by_plane.get((name, m), -PLACED_S) for m in self.held[name]}
            others = [m for m in self.held[name] if m != loaded]
            spare = [m for m in others if self.now - since[m] >= PLACED_S]
            victim = min(spare or others, key=lambda m: self.asked[name][m])
            self.held[name].discard(victim)

    def plane_round(self, now: float) -> None:
        self.now = now
        members = self.members()
        self.window.observe(members, now)
        self.hot = group_hot_models(members, self.window.rates(), self.hot)
        for key in [k for k in self.placed_at if k[1] not in self.held[k[0]]]:
            del self.placed_at[key]
        for i, model in copies_to_drop(members, self.hot, self.placed_at, self.window):
            self.held[i.name].discard(model)
            del self.placed_at[(i.name, model)]
        renewals = renewals_due(members, self.hot, self.placed_at, now)
        for i, model in copies_to_make(members, self.hot) + renewals:
            if model not in self.held[i.name]:
                self.held[i.name].add(model)
                self.copies_made += 1
            self.placed_at[(i.name, model)] = self.loaded_by_plane[(i.name, model)] = now
            self._fit(i.name, model)


def test_after_the_hot_set_shifts_the_group_converges_within_fifteen_seconds() -> None:
    rng = np.random.default_rng(5)
    models = [f"m{i:02d}" for i in range(50)]
    sizes = {m: int(MB * np.exp(rng.uniform(np.log(0.5), np.log(12)))) for m in models}
    budget = sum(sizes.values()) // 5

    def zipf(seed: int) -> np.ndarray:
        weights = (np.random.default_rng(seed).permutation(50) + 1.0) ** -1.1
        return weights / weights.sum()

    laws = {0: zipf(3), 30: zipf(4)}
    group = FakeGroup(sizes, budget)
    turned_hot: list[str] = []
    made_after: dict[int, int] = {}
    for second in range(60):
        law = laws[30] if second >= 30 else laws[0]
        drawn = rng.multinomial(40, law)
        group.serve(dict(zip(models, map(int, drawn), strict=True)))
        group.plane_round(float(second))
        made_after[second] = group.copies_made
        if second >= 45:  # 15 s after the turn: the hot ones on all three, others on one
            members = group.members()
            held = copies(members)
            for model in group.hot:
                assert len(held.get(model, [])) == 3, (second, model)
            assert all(len(h) <= 1 for m, h in held.items() if m not in group.hot), second
            turned_hot.append(",".join(group.hot))
    # what is hot after the turn is the new law's busiest; the hot set holds, and copies
    # are made for what changed, not every second (it made 124 in a minute, one a round)
    assert models[int(np.argmax(laws[30]))] in group.hot
    assert sum(a != b for a, b in itertools.pairwise(turned_hot)) <= 2
    assert made_after[59] - made_after[29] <= 25
