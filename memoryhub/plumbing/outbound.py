"""HTTP to addresses that users or operators name (tenants' webhooks, model endpoints), never to
this machine, its private networks or a cloud's metadata service unless the operator allows them.

A tenant's admin key registers webhook URLs and can read what the webhook answered (a run's
output): without this guard it could make MemoryHub fetch http://127.0.0.1:…/ or
http://169.254.169.254/… and read the reply (server-side request forgery).

Refused by default: loopback, private (RFC 1918, fc00::/7), link-local (169.254/16 with the
metadata address, fe80::/10), carrier-grade NAT, unspecified, multicast and reserved addresses,
IPv4-mapped IPv6 forms of them, and the names localhost / *.localhost / the metadata names. The
operator allows networks with MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS (e.g. a model server on
127.0.0.1, a webhook receiver on 10.0.0.0/8).

A URL is checked twice: when it is stored (a literal address or a refused name: 400
destination_not_allowed) and when a request is sent, where the host name is resolved and the
connection goes to the very address that was checked, so a name that resolved to a public address
when it was stored and to 127.0.0.1 later (DNS rebinding) is refused too. Redirects are not
followed by the callers. Through an HTTP proxy (http_proxy in the environment) the proxy's address
is the one checked.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import urllib.request
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Names that stand for a refused address wherever they are resolved: checked without DNS.
LOCAL_NAMES = {
    "localhost": "127.0.0.1",
    "metadata": "169.254.169.254",
    "metadata.google.internal": "169.254.169.254",
    "instance-data": "169.254.169.254",
}


class DestinationRefused(OSError):  # noqa: N818 - an OSError so that urllib reports it as it does a refused connection
    """The address is not one MemoryHub sends requests to (see the module docstring)."""


def is_refused(address: IPAddress, allowed: Iterable[str] | None = None) -> bool:
    """True for an address outside the public internet that no allowed network contains
    (`allowed`: settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS unless given)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    networks = settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS if allowed is None else allowed
    if any(address in ipaddress.ip_network(network, strict=False) for network in networks):
        return False
    return not address.is_global or address.is_multicast or address.is_reserved


def _numeric(host: str) -> IPAddress | None:
    """The address a literal host stands for, in any form the resolver reads (127.1, 0x7f000001,
    2130706433, [::1]); None for a name."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return None
    return ipaddress.ip_address(infos[0][4][0].split("%")[0])


def check_host(host: str, allowed: Iterable[str] | None = None) -> None:
    """Refuse a literal address or a name that is refused without resolving it (no DNS here)."""
    name = host.lower().rstrip(".")
    if name.endswith(".localhost"):
        name = "localhost"
    address = _numeric(LOCAL_NAMES.get(name, name))
    if address is not None and is_refused(address, allowed):
        raise DestinationRefused(
            f"{address} is a loopback, private, link-local or reserved address"
        )


def check_url(url: str, allowed: Iterable[str] | None = None) -> None:
    """What can be checked when a URL is stored (or configured: memoryhub.settings passes the
    allowed networks, settings not being ready yet); the send checks the resolved address again."""
    host = urlsplit(url).hostname
    if host:
        check_host(host, allowed)


def _resolve_checked(host: str, port: int) -> list[Any]:
    check_host(host)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as exc:
        raise OSError(f"invalid host name {host!r}") from exc
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0].split("%")[0])
        if is_refused(address):
            raise DestinationRefused(
                f"{host} resolves to {address}, a loopback, private, link-local or reserved address"
            )
    return infos


def _create_connection(
    address: tuple[str, int],
    timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT,  # type: ignore[attr-defined]
    source_address: Any = None,
    **_: Any,
) -> socket.socket:
    """socket.create_connection, to the addresses just resolved and checked (never resolved
    again)."""
    host, port = address
    error: OSError | None = None
    for family, kind, proto, _name, sockaddr in _resolve_checked(host, port):
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:  # type: ignore[attr-defined]
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error or OSError(f"no address for {host}")


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _create_connection


class _HTTPSConnection(http.client.HTTPSConnection):
    # TLS still verifies the certificate against the host name: only the TCP connection is pinned.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _create_connection


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req, context=self._context)  # type: ignore[attr-defined]


def build_opener(*handlers: Any) -> urllib.request.OpenerDirector:
    """urllib's opener whose http:// and https:// connections go only to allowed addresses; a
    refused one fails as urllib.error.URLError whose `reason` is a DestinationRefused."""
    return urllib.request.build_opener(_HTTPHandler, _HTTPSHandler, *handlers)
