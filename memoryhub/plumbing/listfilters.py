"""The list endpoints' filters as a table (`narrowed`): each filter a request gives narrows the
list by its rule, a lookup or a function of the value to a condition; one spelling of "a filter
is given" for every list."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.db.models import Model, Q, QuerySet

M = TypeVar("M", bound=Model)
Rule = str | Callable[[Any], Q]  # a lookup ("workspace__name"), or the condition a value sets


def given(value: Any) -> bool:
    """A filter is given when it has a value: absent, an empty string and an empty list are not
    given; False is (is_default=false lists the channels that are not the default)."""
    return value is not None and value != "" and value != []


def narrowed(qs: QuerySet[M], filters: Mapping[str, Any], rules: Mapping[str, Rule]) -> QuerySet[M]:
    """`qs` narrowed by each filter of `rules` that `filters` gives, in the table's order."""
    for name, rule in rules.items():
        value = filters.get(name)
        if given(value):
            qs = qs.filter(rule(value) if callable(rule) else Q(**{rule: value}))
    return qs
