"""Network groups of participant ids: which ids reached the server from one /24 (IPv4) or /48
(IPv6), from the address the login throttle trusts (`base.login_throttle.client_address`), so a
client cannot choose it by sending a header. A group of many ids (a campus, a carrier's NAT) says
nothing about any two: `ids_sharing_a_network` leaves out groups over `CROWDED_NETWORK_IDS`.
"""

import ipaddress
from collections.abc import Iterable

from django.db.models import Count
from django.http import HttpRequest

from base.login_throttle import client_address
from corpus.models import Worker
from crowd.preview import previewed_session

from .models import NetworkSighting

IPV4_PREFIX = 24
IPV6_PREFIX = 48
# More ids than this in one group: a shared gateway, not a household.
CROWDED_NETWORK_IDS = 20


def network_group(address: str) -> str:
    """'203.0.113.0/24' for '203.0.113.7'; '2001:db8:1::/48' for an IPv6 address in it; '' for no address."""
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return ""
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    prefix = IPV4_PREFIX if parsed.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{parsed}/{prefix}", strict=False))


def note_network(request: HttpRequest, worker: Worker) -> None:
    """Record that `worker` reached the server from this request's network group (never in a preview,
    which changes no record of the study's)."""
    if hasattr(request, "session") and previewed_session(request) is not None:
        return
    network = network_group(client_address(request))
    if network:
        NetworkSighting.objects.get_or_create(network=network, worker=worker)


def ids_sharing_a_network(worker_ids: Iterable[int]) -> dict[int, set[int]]:
    """{worker id: the other ids of `worker_ids` seen in one of its network groups}, crowded groups left out."""
    ids = set(worker_ids)
    sightings = list(NetworkSighting.objects.filter(worker_id__in=ids).values_list("network", "worker_id"))
    networks = {network for network, _ in sightings}
    crowded = set(
        NetworkSighting.objects.filter(network__in=networks)
        .values("network")
        .annotate(n=Count("worker_id"))
        .filter(n__gt=CROWDED_NETWORK_IDS)
        .values_list("network", flat=True)
    )
    members: dict[str, set[int]] = {}
    for network, worker_id in sightings:
        if network not in crowded:
            members.setdefault(network, set()).add(worker_id)
    shared: dict[int, set[int]] = {}
    for group in members.values():
        for worker_id in group:
            shared.setdefault(worker_id, set()).update(group - {worker_id})
    return {worker_id: others for worker_id, others in shared.items() if others}
