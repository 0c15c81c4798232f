"""Accounts on a real SQLite database (and PostgreSQL where a test says so): passwords
kept as argon2id, sessions and API keys as hashes, refusals that tell nothing, failed
logins limited."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import literal_column
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from ragloom_app.accounts import AccountError, AccountStore, LoginRefused
from ragloom_app.accounts import store as store_module
from ragloom_app.accounts.keys import MAX_KEYS_PER_USER
from ragloom_app.accounts.store import MAX_FAILED_LOGINS, MAX_FAILED_LOGINS_PER_ADDRESS
from ragloom_app.db.engine import create_db_engine
from ragloom_app.db.models import ApiKeyRecord, SessionRecord, UserRecord

PASSWORD = "correct horse battery"


@pytest.fixture
def store(tmp_path: Path) -> AccountStore:
    return AccountStore(create_db_engine(f"sqlite:///{tmp_path / 'app.db'}"))


def _everything_stored(store: AccountStore) -> str:
    with Session(store.engine) as session:
        rows = [
            *session.exec(select(UserRecord)),
            *session.exec(select(SessionRecord)),
            *session.exec(select(ApiKeyRecord)),
        ]
    return " ".join(repr(row) for row in rows)


def test_a_login_gives_a_session_and_nothing_stored_logs_in(store: AccountStore) -> None:
    alice = store.add_user("alice", PASSWORD, is_admin=True)
    user, token = store.login("alice", PASSWORD, "127.0.0.1")
    assert user == alice and user.is_admin
    assert store.session_user(token) == alice
    stored = _everything_stored(store)
    assert PASSWORD not in stored and token not in stored and "$argon2id$" in stored
    store.logout(token)
    assert store.session_user(token) is None


def test_an_unknown_name_and_a_wrong_password_are_refused_alike(store: AccountStore) -> None:
    store.add_user("alice", PASSWORD)
    with pytest.raises(LoginRefused) as unknown:
        store.login("mallory", PASSWORD)
    with pytest.raises(LoginRefused) as wrong:
        store.login("alice", "not the password")
    assert str(unknown.value) == str(wrong.value) == "the name or the password is not right"


def test_a_name_no_account_can_have_is_unknown_on_every_database(database_url: str) -> None:
    """Not looked up: PostgreSQL refuses a NUL even in a lookup, and the UI's login form
    and a UTF-16 JSON body passed one on (a 500 there)."""
    store = AccountStore(create_db_engine(database_url))
    store.add_user("admin", PASSWORD)
    for name in ("ad\x00min", "admin\n", "admin" * 1000):
        with pytest.raises(LoginRefused, match="the name or the password is not right"):
            store.login(name, PASSWORD)
        assert store.user_named(name) is None


def test_failed_logins_are_limited_per_account_and_the_right_password_waits_too(
    store: AccountStore,
) -> None:
    store.add_user("alice", PASSWORD)
    for n in range(MAX_FAILED_LOGINS):
        with pytest.raises(LoginRefused):
            store.login("alice", f"guess {n}", f"10.0.0.{n}")
    with pytest.raises(LoginRefused, match="too many failed logins") as limited:
        store.login("alice", PASSWORD, "10.0.0.99")
    assert limited.value.retry_after > 0
    store.add_user("bob", PASSWORD)  # another account is not held up
    assert store.login("bob", PASSWORD)[0].name == "bob"


def test_attempts_at_once_at_the_limit_are_never_all_checked(database_url: str) -> None:
    """One failure short of the limit, two wrong passwords sent at once: at most one is
    checked. Each looked at the count, then added to it, and both were checked (the
    review: 10 trials in 10, six checks against a limit of five)."""
    store = AccountStore(create_db_engine(database_url))
    for trial in range(6):
        name = f"racer{trial}"
        for _ in range(MAX_FAILED_LOGINS - 1):
            assert store.by_account.failed(name)
        both_in = threading.Barrier(2, timeout=30)
        checked: list[bool] = []

        def attempt(
            name: str = name, both_in: threading.Barrier = both_in, checked: list[bool] = checked
        ) -> None:
            both_in.wait()
            try:
                store.login(name, "wrong password!", "")
            except LoginRefused as refused:
                checked.append("too many" not in str(refused))

        threads = [threading.Thread(target=attempt) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Both may be refused (counted together at the limit); never both checked.
        assert len(checked) == 2 and checked.count(True) <= 1, (trial, checked)
    # One past the limit is refused and not counted: the count stays at the limit.
    assert all(store.by_account.failed("full") for _ in range(MAX_FAILED_LOGINS))
    assert not any(store.by_account.failed("full") for _ in range(3))
    assert store.by_account.retry_after("full") > 0


def test_a_disabled_user_cannot_log_in_and_its_sessions_and_keys_stop(
    store: AccountStore,
) -> None:
    alice = store.add_user("alice", PASSWORD)
    _, token = store.login("alice", PASSWORD)
    _, key = store.create_key(alice, "laptop")
    store.set_disabled("alice", True)
    assert store.session_user(token) is None and store.key_user(key) is None
    with pytest.raises(LoginRefused):
        store.login("alice", PASSWORD)
    store.set_disabled("alice", False)
    assert store.key_user(key) == alice


def test_a_new_password_ends_the_sessions_and_revokes_the_keys(store: AccountStore) -> None:
    alice = store.add_user("alice", PASSWORD)
    _, token = store.login("alice", PASSWORD)
    _, key = store.create_key(alice, "made by whoever knew the old password")
    # The clean-up after a break-in: disable, reset, enable. Nothing of before works.
    store.set_disabled("alice", True)
    store.set_password("alice", "another long password")
    store.set_disabled("alice", False)
    assert store.session_user(token) is None
    assert store.key_user(key) is None and store.keys(alice) == []
    with pytest.raises(LoginRefused):
        store.login("alice", PASSWORD)
    assert store.login("alice", "another long password")[0].name == "alice"


def test_a_login_checked_while_the_password_changed_opens_no_session(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check takes ~0.15 s; a reset landing in it wins, and a rehash of the old
    password (after a change of the hash's parameters) is not written over the new one."""
    store = AccountStore(create_db_engine(database_url))
    store.add_user("alice", PASSWORD)
    verify = store_module.verify_password

    def reset_meanwhile(stored: str, password: str) -> bool:
        ok = verify(stored, password)
        if password == PASSWORD:
            store.set_password("alice", "the admin's new password")
        return ok

    monkeypatch.setattr(store_module, "verify_password", reset_meanwhile)
    monkeypatch.setattr(store_module, "needs_rehash", lambda stored: True)
    with pytest.raises(LoginRefused, match="the name or the password is not right"):
        store.login("alice", PASSWORD)
    monkeypatch.undo()
    with Session(store.engine) as session:
        assert session.exec(select(SessionRecord)).all() == []
    with pytest.raises(LoginRefused):
        store.login("alice", PASSWORD)
    assert store.login("alice", "the admin's new password")[0].name == "alice"


def test_two_logins_at_once_both_open_though_one_rehashed_the_password(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a change of the hash's parameters every login rehashes: the one whose check
    ended second found the hash changed, though the password was the same."""
    store = AccountStore(create_db_engine(database_url))
    store.add_user("alice", PASSWORD)
    verify = store_module.verify_password
    other_login_done = False

    def the_other_login_rehashes_meanwhile(stored: str, password: str) -> bool:
        nonlocal other_login_done
        ok = verify(stored, password)
        if not other_login_done:
            other_login_done = True
            with Session(store.engine) as session:
                record = session.exec(select(UserRecord)).one()
                record.password_hash = store_module.hash_password(PASSWORD)
                session.add(record)
                session.commit()
        return ok

    monkeypatch.setattr(store_module, "verify_password", the_other_login_rehashes_meanwhile)
    monkeypatch.setattr(store_module, "needs_rehash", lambda stored: True)
    user, token = store.login("alice", PASSWORD, "10.0.0.1")
    assert user.name == "alice" and store.session_user(token) == user
    monkeypatch.undo()
    assert store.login("alice", PASSWORD)[0].name == "alice"


def test_a_login_the_database_failed_counts_no_failure(
    store: AccountStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_user("alice", PASSWORD)

    def database_away(name: str, password: str) -> None:
        raise OperationalError("SELECT", {}, Exception("the database is locked"))

    with monkeypatch.context() as patch:
        patch.setattr(store, "_check_and_open", database_away)
        for _ in range(MAX_FAILED_LOGINS + 1):
            with pytest.raises(OperationalError):
                store.login("alice", PASSWORD, "10.0.0.1")
    assert store.login("alice", PASSWORD, "10.0.0.1")[0].name == "alice"


def test_api_keys_are_shown_once_listed_by_prefix_and_revoked(store: AccountStore) -> None:
    alice = store.add_user("alice", PASSWORD)
    bob = store.add_user("bob", PASSWORD)
    info, key = store.create_key(alice, "laptop")
    assert key.startswith("rlk_") and key.startswith(info.prefix) and len(key) > 40
    assert store.key_user(key) == alice
    assert [k.name for k in store.keys(alice)] == ["laptop"] and store.keys(bob) == []
    assert key not in _everything_stored(store)
    assert not store.revoke_key(bob, info.id)  # not bob's to revoke
    assert store.revoke_key(alice, info.id)
    assert store.key_user(key) is None and store.keys(alice) == []
    assert store.key_user("rlk_" + "x" * 43) is None and store.key_user("sk-local") is None


@pytest.mark.parametrize(
    ("name", "password", "message"),
    [
        ("alice", "short", "at least 8 characters"),
        ("alice", "x" * 1025, "at most 1024 characters"),
        ("", PASSWORD, "a user name is"),
        ("../etc", PASSWORD, "a user name is"),
        ("a" * 65, PASSWORD, "a user name is"),
        ("al\u202eice", PASSWORD, "a user name is"),
        ("alice\n", PASSWORD, "a user name is"),  # "$" matched before the newline, once
        # The local user's name: such an account was shown, and picked by --user, as it.
        ("local", PASSWORD, "names the app's local user"),
        ("Local", PASSWORD, "names the app's local user"),
    ],
)
def test_names_and_passwords_out_of_bounds_are_refused(
    store: AccountStore, name: str, password: str, message: str
) -> None:
    with pytest.raises(AccountError, match=message):
        store.add_user(name, password)


def test_a_name_is_taken_once_whatever_its_case(store: AccountStore) -> None:
    store.add_user("alice", PASSWORD)
    for name in ("alice", "Alice", "ALICE"):
        with pytest.raises(AccountError, match="already"):
            store.add_user(name, PASSWORD)
    assert [user.name for user, _ in store.users()] == ["alice"]


def test_a_name_taken_between_the_check_and_the_insert_is_refused_as_taken(
    store: AccountStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_user("alice", PASSWORD)
    # As if another add of the name had landed just after this one looked.
    never = SimpleNamespace(lower=lambda column: literal_column("'nobody'"))
    monkeypatch.setattr(store_module, "func", never)
    with pytest.raises(AccountError, match="there is a user named 'alice' already"):
        store.add_user("alice", PASSWORD)


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "::ffff:127.0.0.1"])
def test_a_loopback_address_in_any_form_is_not_limited_by_address(
    store: AccountStore, address: str
) -> None:
    for n in range(MAX_FAILED_LOGINS_PER_ADDRESS // 4):
        store.add_user(f"user{n}", PASSWORD)
    for n in range(MAX_FAILED_LOGINS_PER_ADDRESS):
        with pytest.raises(LoginRefused, match="not right"):
            store.login(f"user{n % 5}", "wrong password", address)
    assert store.login("user0", PASSWORD, address)[0].name == "user0"


def test_a_key_label_is_kept_printable_and_short_on_every_database(database_url: str) -> None:
    store = AccountStore(create_db_engine(database_url))
    alice = store.add_user("alice", PASSWORD)
    labels = {"lap\x00top\n": "laptop", "\x1b[31m\t": "[31m", "\x00": "key", "x" * 500: "x" * 80}
    for given, kept in labels.items():
        info, _ = store.create_key(alice, given)
        assert info.name == kept
    assert [k.name for k in store.keys(alice)] == list(labels.values())


def test_keys_made_at_once_stay_within_the_bound_on_every_database(database_url: str) -> None:
    store = AccountStore(create_db_engine(database_url))
    alice = store.add_user("alice", PASSWORD)
    for n in range(MAX_KEYS_PER_USER - 2):
        store.create_key(alice, f"key {n}")
    start = threading.Barrier(6)
    outcomes: list[str] = []

    def make() -> None:
        start.wait()
        try:
            store.create_key(alice, "at once")
            outcomes.append("made")
        except AccountError:
            outcomes.append("refused")

    threads = [threading.Thread(target=make) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["made"] * 2 + ["refused"] * 4
    assert len(store.keys(alice)) == MAX_KEYS_PER_USER


def test_failed_logins_count_alike_in_every_process_on_every_database(database_url: str) -> None:
    """Two app processes behind one address (two stores on one database): an account's
    failures add up across them, as they would in one."""
    first = AccountStore(create_db_engine(database_url))
    second = AccountStore(create_db_engine(database_url))
    first.add_user("alice", PASSWORD)
    for n in range(MAX_FAILED_LOGINS):
        with pytest.raises(LoginRefused, match="not right"):
            (first if n % 2 else second).login("alice", f"guess {n}", f"10.0.0.{n}")
    for store in (first, second):
        with pytest.raises(LoginRefused, match="too many failed logins"):
            store.login("alice", PASSWORD, "10.0.0.99")
