"""Deleting a user removes what is theirs alone and keeps what others read.

Real SQLite, Chroma and BM25 (hash embeddings, a replay LLM): each test gives a user
conversations, a private and a shared index, saved defaults and jobs, deletes the user
with :func:`remove_user` (what ``ragloom users delete`` and the Account tab call), and
looks at what is left, for the user, for the others and in the stores.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select

from ragloom_app.accounts import AccountError, LoginRefused
from ragloom_app.accounts.preferences import ChatDefaults, ChatDefaultsStore
from ragloom_app.accounts.removal import UserBusyError, remove_user
from ragloom_app.app import BaseApp
from ragloom_app.conversations import ConversationStore
from ragloom_app.db.models import IndexRecord, JobStatus, UserSettingsRecord
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.recovery import IMPORT_LOCK
from ragloom_app.index.file.worklock import WorkLock
from tests.helpers.accounts import PASSWORD, app_with_users, existing_user

FILE_INDEX = "ragloom_app.index.file.FileIndex"


@pytest.fixture
def app(tmp_path: Path) -> BaseApp:
    return app_with_users(tmp_path, "alice", "bob")


def _index_with_a_file(
    app: BaseApp, tmp_path: Path, owner: str, name: str, *, shared: bool
) -> Path:
    """A new index of ``owner``'s holding one indexed file; the folder of its files."""
    index = app.indices.create(name, FILE_INDEX, owner=existing_user(app, owner).id, shared=shared)
    path = tmp_path / f"{name}.md"
    path.write_text(f"# {name}\n\nThe {name} notes say the valve opens at 7 bar.\n", "utf-8")
    (outcome,) = index.get_indexing_pipeline({}).run([path])
    assert outcome.status == "indexed"
    return index.files_dir  # type: ignore[attr-defined, no-any-return]


def _conversation(app: BaseApp, owner: str, text: str) -> str:
    store = ConversationStore(app.engine)
    conversation = store.create(owner=existing_user(app, owner).id)
    store.add_message(conversation, "user", text)
    return conversation


def test_a_deleted_user_takes_its_conversations_and_private_indices_and_nothing_else(
    app: BaseApp, tmp_path: Path
) -> None:
    private_files = _index_with_a_file(app, tmp_path, "bob", "bobs-notes", shared=False)
    _index_with_a_file(app, tmp_path, "bob", "team-wiki", shared=True)
    _index_with_a_file(app, tmp_path, "alice", "alices-notes", shared=False)
    bobs = [_conversation(app, "bob", "What does my contract say?") for _ in range(2)]
    alices = _conversation(app, "alice", "When is the audit?")
    bob = existing_user(app, "bob")
    ChatDefaultsStore(app.engine).save(bob.id, ChatDefaults(mode="react"))
    _, key = app.accounts.create_key(bob, "laptop")

    removed = remove_user(app, "bob")

    assert (removed.conversations, removed.indices, removed.shared_kept) == (
        2,
        ("bobs-notes",),
        ("team-wiki",),
    )
    assert removed.summary() == (
        "Deleted bob, with 2 conversations and 1 private index ('bobs-notes'); "
        "kept 1 shared index ('team-wiki') for its readers."
    )
    assert app.accounts.user_named("bob") is None
    assert app.accounts.key_user(key) is None
    store = ConversationStore(app.engine)
    assert store.list(owner=bob.id) == [] and all(store.messages(c) == [] for c in bobs)
    assert [m.content for m in store.messages(alices)] == ["When is the audit?"]
    names = {index.name for index in app.indices.indices}
    assert names == {"My files", "team-wiki", "alices-notes"}
    assert not private_files.exists()  # its stored files went with it
    with Session(app.engine) as session:
        assert session.get(UserSettingsRecord, bob.id) is None
        kept = session.exec(select(IndexRecord).where(IndexRecord.name == "team-wiki")).one()
    # The shared index stays for its readers; the admins manage it now.
    assert app.accounts.display_name(kept.owner) == "(deleted user)"
    wiki = app.indices.get("team-wiki")
    assert app.indices.access(wiki).readable_by(existing_user(app, "alice").id)
    assert app.indices.access(wiki).writable_by("any admin's id", is_admin=True)
    assert wiki.check().clean  # type: ignore[attr-defined]


def test_a_user_added_again_under_the_same_name_sees_nothing_of_the_one_deleted(
    app: BaseApp, tmp_path: Path
) -> None:
    _index_with_a_file(app, tmp_path, "bob", "bobs-notes", shared=False)
    _conversation(app, "bob", "My salary is in payroll.pdf")
    remove_user(app, "bob")
    app.accounts.add_user("bob", PASSWORD)
    again = existing_user(app, "bob")
    assert ConversationStore(app.engine).list(owner=again.id) == []
    assert [i.name for i in app.indices.readable_by(again.id)] == ["My files"]  # shared
    assert app.jobs.jobs(again.id) == []
    # The old index's name is free, and the new one starts empty.
    fresh = app.indices.create("bobs-notes", FILE_INDEX, owner=again.id, shared=False)
    assert fresh.list_sources() == []  # type: ignore[attr-defined]


def test_queued_jobs_are_cancelled_and_finished_ones_forgotten(
    app: BaseApp, tmp_path: Path
) -> None:
    _index_with_a_file(app, tmp_path, "bob", "bobs-notes", shared=False)
    bob, store = existing_user(app, "bob"), app.jobs.store
    index_id = app.indices.get("bobs-notes").id
    queued = store.create(index_id=index_id, owner=bob.id, kind="reindex", files=[])
    done = store.create(index_id=index_id, owner=bob.id, kind="reindex", files=[])
    store.finish(done.id, JobStatus.DONE)
    alices = store.create(
        index_id=index_id, owner=existing_user(app, "alice").id, kind="add", files=[]
    )
    store.finish(alices.id, JobStatus.DONE)

    assert remove_user(app, "bob").jobs == 2  # the finished one and the one cancelled
    assert store.get(queued.id) is None and store.get(done.id) is None
    assert store.get(alices.id) is not None  # another user's history is theirs


def test_a_running_job_refuses_the_deletion_until_it_stops_and_the_account_stays_disabled(
    app: BaseApp, tmp_path: Path
) -> None:
    _index_with_a_file(app, tmp_path, "bob", "bobs-notes", shared=False)
    bob, store = existing_user(app, "bob"), app.jobs.store
    running = store.create(
        index_id=app.indices.get("bobs-notes").id, owner=bob.id, kind="reindex", files=[]
    )
    assert store.claim(running.id, "worker-1", stall_seconds=60)
    conversation = _conversation(app, "bob", "Still there?")

    with pytest.raises(UserBusyError, match="1 indexing job"):
        remove_user(app, "bob")
    assert store.cancel_requested(running.id)  # the worker stops after its file
    assert dict((u.name, off) for u, off in app.accounts.users())["bob"] is True
    with pytest.raises(LoginRefused):  # nobody acts as bob meanwhile
        app.accounts.login("bob", PASSWORD)
    assert ConversationStore(app.engine).messages(conversation) != []  # nothing gone yet

    store.finish(running.id, JobStatus.CANCELLED, worker="worker-1")
    removed = remove_user(app, "bob")  # the second call finishes
    assert removed.indices == ("bobs-notes",) and removed.conversations == 1
    assert app.accounts.user_named("bob") is None


def test_a_private_index_an_import_is_filling_refuses_the_deletion_before_anything_goes(
    app: BaseApp, tmp_path: Path
) -> None:
    """Before, the index was deleted under ``ragloom index import --owner bob``, which
    died halfway."""
    _index_with_a_file(app, tmp_path, "bob", "bobs-notes", shared=False)
    _index_with_a_file(app, tmp_path, "bob", "bobs-import", shared=False)
    conversation = _conversation(app, "bob", "Still there?")
    index = app.indices.get("bobs-import")
    assert isinstance(index, FileIndex)
    mark = WorkLock(index.locks_dir, IMPORT_LOCK)
    mark.acquire_new()  # as an import holds it while it fills the index
    try:
        with pytest.raises(UserBusyError) as refused:
            remove_user(app, "bob")
    finally:
        mark.release()  # as an import that ended lets it go
    assert str(refused.value).startswith(
        "bob is disabled and their private index 'bobs-import' cannot be deleted now: "
        "an import is still filling it"
    )
    assert dict((u.name, off) for u, off in app.accounts.users())["bob"] is True
    assert ConversationStore(app.engine).messages(conversation) != []  # nothing gone yet
    assert {i.name for i in app.indices.indices} >= {"bobs-notes", "bobs-import"}

    removed = remove_user(app, "bob")  # once the import has ended
    assert sorted(removed.indices) == ["bobs-import", "bobs-notes"]
    assert removed.conversations == 1 and app.accounts.user_named("bob") is None


def test_an_unknown_user_is_told_and_nothing_changes(app: BaseApp) -> None:
    with pytest.raises(AccountError, match="no user named 'carol'"):
        remove_user(app, "carol")
    assert sorted(u.name for u, _ in app.accounts.users()) == ["alice", "bob"]
