"""Reading settings from the environment: each helper fails loudly on a bad value.

Imported by memoryhub.settings (and nothing here imports settings back).
"""

from __future__ import annotations

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return parse_bool(name, raw)


def parse_bool(name: str, raw: str) -> bool:
    """true/false, 1/0, yes/no, on/off (any case); anything else is refused, naming `name`."""
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_float(
    name: str, default: float, *, low: float | None = None, high: float | None = None
) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ImproperlyConfigured(f"{name}={value} must be within [{low}, {high}]")
    return value


def env_choice(name: str, default: str, choices: set[str]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {sorted(choices)}")
    return value


def env_list(name: str, default: str, choices: set[str]) -> tuple[str, ...]:
    """Comma-separated words, each one of `choices`; anything else is refused, naming `name`."""
    items = tuple(i.strip() for i in os.environ.get(name, default).split(",") if i.strip())
    unknown = sorted(set(items) - choices)
    if unknown:
        raise ImproperlyConfigured(
            f"{name} has unknown values {unknown}: each must be one of {sorted(choices)}"
        )
    return items


def env_networks(name: str, default: str = "") -> tuple[str, ...]:
    """Comma-separated IP addresses or CIDR networks (10.0.0.0/8, ::1), each written back as a
    network ("10.0.0.1" is "10.0.0.1/32"); anything else is refused, naming `name`."""
    networks = []
    for item in (i.strip() for i in os.environ.get(name, default).split(",")):
        if not item:
            continue
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not an IP address or network (e.g. 10.0.0.0/8)"
            ) from None
    return tuple(networks)


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
WILDCARD_ADDRESSES = ("", "0.0.0.0", "::", "[::]")


def allowed_hosts(raw: str, bind_host: str) -> list[str]:
    """ALLOWED_HOSTS as given (comma-separated), else the loopback names plus the address served on.

    Never "*" by default: Django builds absolute URLs (pagination `next` links) from the Host
    header, so any Host would be reflected into them. Serving on all interfaces (0.0.0.0) needs
    ALLOWED_HOSTS to name the host names clients use; until then only loopback names are answered.
    """
    named = [h.strip() for h in raw.split(",") if h.strip()]
    if named:
        return named
    hosts = list(LOOPBACK_HOSTS)
    if bind_host in WILDCARD_ADDRESSES:
        return hosts
    name = f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host
    return hosts if name in hosts else [*hosts, name]
