"""Which address a login counts against: the peer's, or, behind a proxy the admin trusts
(TRUSTED_PROXIES), the client it forwarded for; never what a client says of itself."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ragloom_app.accounts.store import MAX_FAILED_LOGINS_PER_ADDRESS
from ragloom_app.api.client_address import MAX_FORWARDED_CHARS, client_address, proxy_networks
from ragloom_app.settings import AppSettings, SettingsError
from tests.helpers.api_server import replay_app, served

PROXIES = proxy_networks(["10.0.0.2", "10.0.1.0/24"])
PASSWORD = "correct horse battery"


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "client"),
    [
        # No trusted proxy in front: the header is anyone's to send.
        ("198.51.100.7", ["203.0.113.9"], "198.51.100.7"),
        ("198.51.100.7", [], "198.51.100.7"),
        # The proxy appended the address it was reached from.
        ("10.0.0.2", ["203.0.113.9"], "203.0.113.9"),
        # What the client wrote before it counts for nothing.
        ("10.0.0.2", ["1.1.1.1, 203.0.113.9"], "203.0.113.9"),
        ("10.0.0.2", ["1.1.1.1", "203.0.113.9"], "203.0.113.9"),  # as two header lines
        # Two trusted proxies in a row, the inner one reached from the outer one.
        ("10.0.0.2", ["203.0.113.9, 10.0.1.5"], "203.0.113.9"),
        # Garbage where a proxy's entry should be: the last address read is the client.
        ("10.0.0.2", ["not an address, 10.0.1.5"], "10.0.1.5"),
        ("10.0.0.2", ["not an address"], "10.0.0.2"),
        ("10.0.0.2", [], "10.0.0.2"),
        # The forms addresses come in: IPv4 on a dual-stack socket, brackets, a port.
        ("::ffff:10.0.0.2", ["203.0.113.9"], "203.0.113.9"),
        ("10.0.0.2", ["[2001:db8::1]:443"], "2001:db8::1"),
        # Loopback read through a proxy is no local client: never spared the limit.
        ("127.0.0.1", ["127.0.0.1"], "127.0.0.1"),  # no proxy trusted on loopback here
        ("10.0.0.2", ["127.0.0.1"], "127.0.0.1 via a proxy"),
    ],
)
def test_the_client_is_the_first_address_from_the_right_that_no_trusted_proxy_has(
    peer: str, forwarded_for: list[str], client: str
) -> None:
    assert client_address(peer, forwarded_for, PROXIES) == client


def test_a_local_proxy_reached_by_a_header_it_cannot_read_is_no_local_client() -> None:
    local = proxy_networks(["127.0.0.1"])
    assert client_address("127.0.0.1", ["not an address"], local) == "127.0.0.1 via a proxy"
    assert client_address("127.0.0.1", ["203.0.113.9"], local) == "203.0.113.9"


def test_only_the_right_end_of_a_huge_header_is_read() -> None:
    spoofed = ", ".join(["1.1.1.1"] * 100_000)
    header = f"{spoofed}, 203.0.113.9"
    assert len(header) > 100 * MAX_FORWARDED_CHARS
    assert client_address("10.0.0.2", [header], PROXIES) == "203.0.113.9"


@pytest.mark.parametrize("proxies", ["10.0.0.2", ["proxy.lan"], [7], ["10.0.0.0/33"], ["x"] * 65])
def test_trusted_proxies_that_are_not_addresses_are_refused_at_start(
    tmp_path: Path, proxies: object
) -> None:
    with pytest.raises(SettingsError, match="TRUSTED_PROXIES"):
        AppSettings(data_dir=tmp_path, trusted_proxies=proxies)  # type: ignore[arg-type]


def test_behind_a_trusted_proxy_one_clients_failures_lock_out_that_client_alone(
    tmp_path: Path,
) -> None:
    # The test's client is the proxy, on loopback, forwarding for made-up clients.
    app = replay_app(tmp_path, indices=[], require_login=True, trusted_proxies=["127.0.0.1"])
    for n in range(MAX_FAILED_LOGINS_PER_ADDRESS // 4):
        app.accounts.add_user(f"user{n}", PASSWORD)
    with served(app) as url:

        def login(name: str, password: str, client: str) -> httpx.Response:
            return httpx.post(
                f"{url}api/v1/login",
                json={"name": name, "password": password},
                headers={"X-Forwarded-For": f"10.9.9.9, {client}"},
                timeout=30,
            )

        # 4 wrong passwords on each account (under its own limit of 5), all from one client.
        for n in range(MAX_FAILED_LOGINS_PER_ADDRESS):
            assert login(f"user{n % 5}", "wrong password", "203.0.113.66").status_code == 401
        assert login("user0", PASSWORD, "203.0.113.66").status_code == 429
        # Every other client behind the same proxy logs in.
        assert login("user1", PASSWORD, "203.0.113.7").status_code == 200
