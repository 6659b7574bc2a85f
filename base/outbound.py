"""The one owner of every outbound request a URL that a researcher typed reaches (docs/outbound.md).

A researcher's URL is resolved here and refused when any address it resolves to is not public
(loopback, private, link-local, shared, multicast, reserved, unspecified) unless the deployment
allow-lists its network (settings.OUTBOUND_ALLOWED_NETWORKS); a cloud metadata address is refused
even then. The request goes to the very address that was checked (the host's name still in the
Host header and the TLS handshake), so a name that resolves elsewhere a moment later changes
nothing. No redirect is followed; one deadline covers connecting, sending and reading; an answer
is read in chunks and cut past its byte limit, never read whole.
"""

import contextlib
import http.client
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024
READ_CHUNK_BYTES = 64 * 1024

# Cloud metadata services hand out the machine's credentials: never reachable, allow-list or not.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(text)
    for text in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean
        "169.254.170.2",  # AWS ECS task credentials
        "169.254.169.253",  # AWS DNS
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
    )
)
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")


class OutboundError(Exception):
    """The request was not made or not answered; the message is fit to show the researcher.
    `retry`: whether asking again later may help (a deadline, a refused connection)."""

    retry = False


class RefusedDestination(OutboundError):
    """The URL is not one the platform goes to: scheme, credentials, or an address not allowed."""


class RedirectRefused(OutboundError):
    """The server answered with a redirect; it is not followed (it could point anywhere)."""


class AnswerTooLarge(OutboundError):
    """The answer is longer than its byte limit; the rest was not read."""


class DeadlinePassed(OutboundError):
    retry = True


class Unreachable(OutboundError):
    retry = True


@dataclass(frozen=True)
class Destination:
    """A checked URL: where to connect (`addresses`, each allowed) and what to ask for there."""

    scheme: str
    host: str
    port: int
    target: str  # the path and query sent in the request line
    addresses: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)  # names in lower case

    def json(self) -> Any:
        return json.loads(self.body)


def allowed_networks() -> list[IPNetwork]:
    """The deployment's allow-list (OUTBOUND_ALLOWED_NETWORKS: CIDRs such as 10.20.0.0/16)."""
    networks = []
    for entry in getattr(settings, "OUTBOUND_ALLOWED_NETWORKS", []) or []:
        try:
            networks.append(ipaddress.ip_network(str(entry).strip(), strict=False))
        except ValueError as error:
            raise ImproperlyConfigured(f"OUTBOUND_ALLOWED_NETWORKS: {entry!r} is not a network ({error})") from error
    return networks


def _embedded(address: IPAddress) -> list[IPAddress]:
    """The IPv4 addresses an IPv6 address carries to (mapped, NAT64, 6to4, Teredo)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found: list[IPAddress] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address in NAT64_PREFIX:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


def _kind_of(address: IPAddress) -> str:
    """What is wrong with the address ("" for a public one), the allow-list aside."""
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private address"
    if address.is_reserved or not address.is_global:
        return "a reserved or internal address"
    return ""


def refusal(address: IPAddress, networks: Iterable[IPNetwork]) -> str:
    """Why the platform must not connect to `address` ("" when it may)."""
    carried = _embedded(address)
    for candidate in (address, *carried):
        if candidate in METADATA_ADDRESSES:
            return f"{candidate} is a cloud metadata address"
    networks = list(networks)
    # An IPv4-mapped address is that IPv4 address; judge it as one.
    judged = [address] if isinstance(address, ipaddress.IPv4Address) or address.ipv4_mapped is None else []
    for candidate in (*judged, *carried):
        kind = _kind_of(candidate)
        if kind and not any(candidate.version == n.version and candidate in n for n in networks):
            return f"{candidate} is {kind}"
    return ""


def _split(url: str) -> tuple[str, str, int, str]:
    if not isinstance(url, str) or not url or any(ch.isspace() or ord(ch) < 32 or ch == "\\" for ch in url):
        raise RefusedDestination("The URL is empty or holds spaces, control characters or backslashes.")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise RefusedDestination("The URL must start with http:// or https://.")
    if "@" in parts.netloc:
        raise RefusedDestination("The URL must not hold a user name or password (user@host): send a key instead.")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as error:
        raise RefusedDestination("The URL's port is not a number from 1 to 65535.") from error
    host = parts.hostname or ""
    if not host:
        raise RefusedDestination("The URL names no host.")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, host, port, target


def check_url(url: str) -> Destination:
    """The URL resolved and checked (module docstring); RefusedDestination says what is wrong."""
    scheme, host, port, target = _split(url)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise RefusedDestination(f"The host {host!r} does not resolve from the platform.") from error
    networks = allowed_networks()
    addresses: list[str] = []
    for _family, _type, _proto, _name, sockaddr in found:
        text = str(sockaddr[0]).split("%", 1)[0]
        address = ipaddress.ip_address(text)
        why = refusal(address, networks)
        if why:
            # Any one refused address refuses the host: which one a later connection gets is the DNS's choice.
            raise RefusedDestination(
                f"The host {host!r} resolves to {why}: the platform does not send requests inward "
                "(a deployment may allow a network in OUTBOUND_ALLOWED_NETWORKS)."
            )
        if text not in addresses:
            addresses.append(text)
    if not addresses:
        raise RefusedDestination(f"The host {host!r} does not resolve from the platform.")
    return Destination(scheme=scheme, host=host, port=port, target=target, addresses=tuple(addresses))


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection to the checked addresses only; the host's name in Host and SNI."""

    def __init__(self, destination: Destination, deadline: float) -> None:
        super().__init__(destination.host, destination.port, timeout=max(0.001, deadline - time.monotonic()))
        self.destination = destination
        self.deadline = deadline
        self.cutter: socket.socket | None = None
        self.cut = threading.Event()

    def connect(self) -> None:
        failure: OSError | None = None
        sock = None
        for address in self.destination.addresses:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                sock = socket.create_connection((address, self.destination.port), timeout=remaining)
                break
            except OSError as error:
                failure = error
        if sock is None:
            raise failure or TimeoutError("the deadline passed before a connection was made")
        # A second handle on the same socket: shutting it down at the deadline ends any read,
        # TLS handshake included, however slowly the other side trickles.
        self.cutter = sock.dup()
        if self.cut.is_set():
            self.cutter.shutdown(socket.SHUT_RDWR)
        if self.destination.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.destination.host)
        self.sock = sock

    def cut_now(self) -> None:
        self.cut.set()
        cutter = self.cutter
        if cutter is not None:
            with contextlib.suppress(OSError):  # already closed: nothing left to cut
                cutter.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        super().close()
        if self.cutter is not None:
            self.cutter.close()
            self.cutter = None


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    deadline_seconds: float,
    max_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
) -> Answer:
    """One request to a researcher's URL (module docstring). Raises an OutboundError for a refused
    URL, a redirect, an answer past `max_bytes`, the deadline, or a server that cannot be reached;
    any other status comes back as the Answer's."""
    destination = check_url(url)  # at call time too: DNS may have changed since the URL was saved
    deadline = time.monotonic() + deadline_seconds
    connection = _PinnedConnection(destination, deadline)
    timer = threading.Timer(deadline_seconds, connection.cut_now)
    timer.daemon = True
    timer.start()
    try:
        try:
            connection.request(method, destination.target, body=body, headers=dict(headers or {}))
            response = connection.getresponse()
            answer = _read(response, max_bytes, deadline, deadline_seconds)
        except OutboundError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as failure:
            if connection.cut.is_set() or time.monotonic() >= deadline:
                raise DeadlinePassed(f"No whole answer within {deadline_seconds:g} s.") from failure
            raise Unreachable(f"The server could not be reached ({type(failure).__name__}).") from failure
        if connection.cut.is_set():
            # A cut can look like the end of an answer without a length: what came is not all of it.
            raise DeadlinePassed(f"No whole answer within {deadline_seconds:g} s.")
        return answer
    finally:
        timer.cancel()
        connection.close()


def _read(response: http.client.HTTPResponse, max_bytes: int, deadline: float, deadline_seconds: float) -> Answer:
    headers = {name.lower(): value for name, value in response.getheaders()}
    if 300 <= response.status < 400:
        where = urlsplit(headers.get("location", "")).hostname or "elsewhere"
        raise RedirectRefused(
            f"The server answered HTTP {response.status}, a redirect to {where}; redirects are not followed: "
            "give the URL the server serves at."
        )
    length = headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise AnswerTooLarge(f"The answer would be {int(length):,} bytes; at most {max_bytes:,} are read.")
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() >= deadline:
            raise DeadlinePassed(f"No whole answer within {deadline_seconds:g} s.")
        chunk = response.read1(min(READ_CHUNK_BYTES, max_bytes + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise AnswerTooLarge(f"The answer is longer than {max_bytes:,} bytes; the rest was not read.")
    return Answer(status=response.status, body=b"".join(chunks), headers=headers)


def post_json(
    url: str,
    payload: Any,
    *,
    headers: Mapping[str, str] | None = None,
    deadline_seconds: float,
    max_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
) -> Answer:
    """POST `payload` as JSON (request())."""
    sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
    return request(
        "POST",
        url,
        body=json.dumps(payload).encode(),
        headers=sent,
        deadline_seconds=deadline_seconds,
        max_bytes=max_bytes,
    )
