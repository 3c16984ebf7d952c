"""Admin login throttling (django-axes): repeated failures lock the name and address out."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

LOGIN = "/admin/login/?next=/admin/"


def attempt(
    client: Client, password: str, address: str = "10.0.0.1", username: str = "root"
) -> int:
    response = client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)
    return response.status_code


@pytest.fixture
def root(db, settings) -> None:  # type: ignore[no-untyped-def]
    # fast, tests only
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    get_user_model().objects.create_superuser("root", "r@example.com", "right-password-123")


def test_five_failures_lock_the_login_even_with_the_right_password(root, settings) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    assert settings.AXES_FAILURE_LIMIT == 5
    # the form again, with an error
    assert [attempt(client, f"wrong-{i}") for i in range(4)] == [200] * 4
    assert attempt(client, "wrong-4") == 429
    assert attempt(client, "right-password-123") == 429
    assert "_auth_user_id" not in client.session
    # Another user name from another address is not locked out.
    assert attempt(Client(), "wrong", username="someone-else", address="10.0.0.2") == 200


def test_failures_from_many_addresses_lock_the_user_name(root) -> None:  # type: ignore[no-untyped-def]
    """Guesses spread over addresses (or over forged ones) still count for the name."""
    assert [attempt(Client(), f"wrong-{i}", address=f"10.9.9.{i}") for i in range(5)] == [
        200
    ] * 4 + [429]
    other = Client()
    assert attempt(other, "right-password-123", address="10.9.9.99") == 429
    assert "_auth_user_id" not in other.session


def test_failures_from_one_address_lock_it_for_every_name(root) -> None:  # type: ignore[no-untyped-def]
    assert [attempt(Client(), "wrong", username=f"user-{i}") for i in range(5)] == [200] * 4 + [429]
    assert attempt(Client(), "right-password-123") == 429  # root, from the same address
    assert attempt(Client(), "right-password-123", address="10.0.0.2") == 302


def test_a_success_before_the_limit_resets_the_count(root) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    for i in range(4):
        attempt(client, f"wrong-{i}")
    assert attempt(client, "right-password-123") == 302
    client.logout()
    assert [attempt(client, f"again-{i}") for i in range(4)] == [200] * 4
    assert attempt(client, "right-password-123") == 302


def test_the_lockout_ends_after_the_cool_off(root, settings) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    for i in range(5):
        attempt(client, f"wrong-{i}")
    assert attempt(client, "right-password-123") == 429
    with time_machine.travel(timezone.now() + settings.AXES_COOLOFF_TIME + timedelta(seconds=1)):
        assert attempt(client, "right-password-123") == 302
