"""Outbound requests (memoryhub.plumbing.outbound): webhooks and model endpoints never reach this
machine, private networks or metadata services unless the operator allows them; the settings
that say which proxies and networks are trusted fail loudly on bad values."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryhub.plumbing import outbound
from memoryhub.plumbing.env import env_networks
from memoryhub.plumbing.llm import SummariserError, chat_completion
from memoryhub.plumbing.webserver import proxy_config
from tests.memoryhub.test_summarisers import completion, fake_llm

MESSAGES = [{"role": "user", "content": "hi"}]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:10.0.0.1",
        "::",
    ],
)
def test_addresses_outside_the_public_internet_are_refused(address: str) -> None:
    assert outbound.is_refused(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_are_not(address: str) -> None:
    assert not outbound.is_refused(ipaddress.ip_address(address))


def test_allowed_networks_are_not_refused(settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("10.0.0.0/8", "::1/128")
    assert not outbound.is_refused(ipaddress.ip_address("10.20.30.40"))
    assert not outbound.is_refused(ipaddress.ip_address("::1"))
    assert outbound.is_refused(ipaddress.ip_address("127.0.0.1"))
    outbound.check_url("http://10.1.1.1/x")
    with pytest.raises(outbound.DestinationRefused):
        outbound.check_url("http://192.168.1.1/x")


def test_model_calls_to_a_refused_address_fail_at_once_and_send_nothing(
    settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 3)
    # a retry would hang the test: there is none
    monkeypatch.setattr("memoryhub.plumbing.llm.BACKOFF_SECONDS", 60)
    with fake_llm(lambda body: (200, completion("secret of the internal service"))) as llm:
        settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ()
        with pytest.raises(SummariserError, match="refused") as caught:
            chat_completion(url=llm.url, model="m", api_key="", messages=MESSAGES, timeout=5)
        assert "MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS" in str(caught.value)
        assert llm.requests == []
        settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
        assert chat_completion(
            url=llm.url, model="m", api_key="", messages=MESSAGES, timeout=5
        ).startswith("secret")


def test_network_settings_are_read_and_bad_ones_refused(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORYHUB_TRUSTED_PROXIES", " 10.0.0.1, 192.168.0.0/16 ,::1")
    assert env_networks("MEMORYHUB_TRUSTED_PROXIES") == ("10.0.0.1/32", "192.168.0.0/16", "::1/128")
    monkeypatch.setenv("MEMORYHUB_TRUSTED_PROXIES", "10.0.0.1,proxy.internal")
    with pytest.raises(ImproperlyConfigured, match="MEMORYHUB_TRUSTED_PROXIES"):
        env_networks("MEMORYHUB_TRUSTED_PROXIES")
    monkeypatch.delenv("MEMORYHUB_TRUSTED_PROXIES")
    assert env_networks("MEMORYHUB_TRUSTED_PROXIES") == ()


def test_forwarded_headers_are_believed_only_from_trusted_proxies() -> None:
    assert proxy_config(()) == (False, [])  # not even from 127.0.0.1
    assert proxy_config(("10.0.0.1/32",)) == (True, ["10.0.0.1/32"])


def settings_load(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import memoryhub.settings"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_a_configured_model_endpoint_on_this_machine_stops_the_start_unless_allowed() -> None:
    refused = settings_load(MEMORYHUB_SUMMARISER_URL="http://127.0.0.1:11434/v1")
    assert refused.returncode != 0
    assert (
        "MEMORYHUB_SUMMARISER_URL" in refused.stderr
        and "MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS" in refused.stderr
    )
    assert (
        settings_load(
            MEMORYHUB_SUMMARISER_URL="http://127.0.0.1:11434/v1",
            MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS="127.0.0.1",
        ).returncode
        == 0
    )
    # not a network
    assert settings_load(MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS="localhost").returncode != 0
