"""A short, seeded schemathesis run over every operation of the live OpenAPI schema:
positive and negative cases, every check of tests/fuzzing.py. bench/fuzz.py is the long run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections

from tests.base import make_key, make_tenant
from tests.fuzzing import Outcome, fuzz_operation

EXAMPLES = 4  # per operation and mode: ~370 cases
SEED = 16


@pytest.fixture
def keep_connection() -> Iterator[None]:
    """The WSGI app closes the connection after each request, which would end the test's
    transaction: as Django's own test client does, keep it open."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
def test_fuzz_every_operation_seeded(keep_connection: None) -> None:
    headers = {"Authorization": f"Bearer {make_key(make_tenant('fuzz'))}"}
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())
    total = Outcome()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 40
    for operation in operations:
        total.add(
            fuzz_operation(
                operation,
                lambda case: case.call(headers=headers),
                headers=headers,
                examples=EXAMPLES,
                seed=SEED,
            )
        )
    assert total.cases >= len(operations) * 2
    assert not total.failures, (
        f"{len(total.failures)} of {total.cases} cases failed:\n" + "\n".join(total.failures[:400])
    )
