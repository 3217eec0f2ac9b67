"""The declarations are the one place a key is written: the validator (`Checker.section`), the JSON Schema and the
key reference all read a section from its `Section`, and the defaults from the section's model class."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import jsonschema

from gpushare.model.stack import Spot, SpotEviction
from gpushare.stackfile.checks import Checker
from gpushare.stackfile.declarations import ARRAY, INTEGER, NUMBER, OBJECT, STRING, Field, Section
from gpushare.stackfile.pool_settings import SPOT
from gpushare.stackfile.reference import reference_markdown
from gpushare.stackfile.schema import stack_file_schema
from tests.stackfile.schema_check import schema_validator
from tests.stackfile.test_config import POOL0, assert_problems, parse, pool, problems_of, raw_with, top


@dataclasses.dataclass(frozen=True)
class SpotWithBudget(Spot):
    """The model field a newcomer adds beside the key."""

    hourly_budget: int = 10


BUDGET = Field("hourlyBudget", INTEGER, "USD per hour the pool may cost.", minimum=1, maximum=100)


@contextmanager
def declared(section: Section, spec: Field, model: type) -> Iterator[None]:
    """`spec` added to `section` (and its model replaced), as editing the section's module would; undone after.
    The suite's schema check of every accepted stack (`schema_check`) then reads the schema with the key too."""
    saved = section.fields, section.by_name, section.model
    object.__setattr__(section, "fields", (*section.fields, spec))
    object.__setattr__(section, "model", model)
    section.__post_init__()
    schema_validator.cache_clear()
    try:
        yield
    finally:
        for name, value in zip(("fields", "by_name", "model"), saved):
            object.__setattr__(section, name, value)
        schema_validator.cache_clear()


def test_a_key_added_in_one_place_is_known_to_the_validator_the_schema_and_the_reference():
    before = problems_of(raw_with(pool(spot={"hourlyBudget": 20})))
    assert_problems(before, [(f"{POOL0}.spot.hourlyBudget", ("unknown key", "maxPrice, eviction"))])

    with declared(SPOT, BUDGET, SpotWithBudget):
        assert parse(raw_with(pool(spot={}))).pools[0].spot.hourly_budget == 10  # the model's default
        assert parse(raw_with(pool(spot={"hourlyBudget": 20}))).pools[0].spot.hourly_budget == 20
        assert_problems(problems_of(raw_with(pool(spot={"hourlyBudget": 0}))),
                        [(f"{POOL0}.spot.hourlyBudget", ("must be from 1 to 100", "got 0"))])

        schema = stack_file_schema()
        spot = (schema["properties"]["config"]["properties"]["gpushare:pools"]["items"]["properties"]["spot"]
                ["properties"])
        assert spot["hourlyBudget"]["default"] == 10
        assert spot["hourlyBudget"]["description"].startswith("Optional. Default: 10.")
        stack = {"config": {**raw_with(pool(spot={"hourlyBudget": 0}))}}
        assert not jsonschema.Draft202012Validator(schema).is_valid(stack)
        stack["config"]["gpushare:pools"][0]["spot"]["hourlyBudget"] = 20
        assert jsonschema.Draft202012Validator(schema).is_valid(stack)

        assert ("| `gpushare:pools[].spot.hourlyBudget` | integer | Optional. Default: 10. USD per hour the pool may "
                "cost. | 1 <= value <= 100 |") in reference_markdown()

    assert "hourlyBudget" not in reference_markdown()


def test_a_section_reports_all_its_problems_at_once():
    problems = problems_of(raw_with(pool(spot={"maxPrice": "cheap", "eviction": "Evict"})))
    assert_problems(problems, [(f"{POOL0}.spot.maxPrice", ("-1", "above 0", "'cheap'")),
                               (f"{POOL0}.spot.eviction", ("'Evict'", "allowed: Delete, Deallocate"))])


def test_defaults_come_from_the_model():
    assert SPOT["eviction"].default is Spot().eviction is SpotEviction.DELETE
    assert SPOT["maxPrice"].default == Spot().max_price
    assert parse(raw_with(pool(spot={}))).pools[0].spot == Spot()


def test_a_missing_required_key_is_reported_with_what_it_holds():
    c = Checker()
    section = Section((Field("zone", INTEGER, "The zone.", required=True, minimum=1, maximum=3),
                       Field("mode", INTEGER, "How many.", required=True, minimum=0,
                             missing="how many nodes (0 or more)")))
    assert c.section({}, section, "x") is None
    assert [(p.path, p.message) for p in c.problems] == [("x.zone", "required: the zone."),
                                                         ("x.mode", "required: how many nodes (0 or more)")]


def test_a_nested_key_written_one_level_up_is_reported_as_mis_indented():
    """Every nested section's keys are known one level up (the tenant queue's preemption, the pool's upgrade)."""
    tenants = [{"name": "vision", "pools": ["t4"], "queue": {"reclaimWithinCohort": "Never"}}]
    assert_problems(problems_of(raw_with(top("gpushare:tenants", tenants))),
                    [("gpushare:tenants[0].queue.reclaimWithinCohort",
                      ("is a key of `preemption`", "indented under `preemption:`"))])
    assert_problems(problems_of(raw_with(pool(maxSurge=1))),
                    [(f"{POOL0}.maxSurge", ("is a key of `upgrade`", "indented under `upgrade:`"))])


def test_a_declaration_alone_checks_numbers_lists_and_choices():
    """What a new key gets without a rule of its own: a NUMBER's bounds, a list's items and repeats, a choice of
    strings, a nested section, each problem at its path with the bad value and what is allowed."""
    nested = Section((Field("size", INTEGER, "A size.", minimum=1),))
    section = Section((
        Field("ratio", NUMBER, "A ratio.", exclusive_minimum=0),
        Field("names", ARRAY, "Names.", min_items=1, unique=True,
              items=Field("name", STRING, "A name.", enum=("a", "b"))),
        Field("inner", OBJECT, "Nested.", section=nested),
    ))
    c = Checker()
    values = c.section({"ratio": "0.5", "names": ["a", "c", "a"], "inner": {"size": 0}}, section, "x")
    assert [(p.path, p.message) for p in c.problems] == [
        ("x.ratio", "expected above 0, got a string '0.5'; write it without quotes"),
        ("x.names[1]", "unknown value 'c'; allowed: a, b"),
        ("x.names[2]", "name 'a' is listed twice"),
        ("x.inner.size", "must be 1 or more, got 0"),
    ]
    assert values["names"] == ("a",) and "ratio" in values.failed

    c = Checker()
    values = c.section({"ratio": 0.25, "names": [], "inner": {"size": 2}}, section, "x")
    assert [(p.path, p.message) for p in c.problems] == [("x.names", "expected a list of at least 1 name, got a "
                                                                     "list []")]
    assert values["ratio"] == 0.25 and values["inner"]["size"] == 2
