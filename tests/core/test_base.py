"""BaseComponent: theflow composition without theflow's run tracking on disk."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from theflow import Node

from ragloom.base import BaseComponent


class _AddOne(BaseComponent):
    def run(self, x: int) -> int:
        return x + 1


class _Twice(BaseComponent):
    first: _AddOne = Node(default=_AddOne)
    second: _AddOne = Node(default=_AddOne)

    def run(self, x: int) -> int:
        return self.second(self.first(x))


def test_calls_write_nothing_to_disk(tmp_path: Path) -> None:
    # A fresh interpreter in an empty folder, so theflow reads its settings as a user's
    # program would (ragloom imported first, as its components do); every file or folder
    # created is recorded by an audit hook.
    script = textwrap.dedent(
        """
        import sys
        created = []
        def hook(event, args):
            if event == "open" and isinstance(args[1], str) and args[1][:1] in "wax":
                created.append((event, str(args[0])))
        sys.addaudithook(hook)
        from ragloom.base import BaseComponent
        from theflow import Node

        class AddOne(BaseComponent):
            def run(self, x):
                return x + 1

        class Twice(BaseComponent):
            first: AddOne = Node(default=AddOne)
            second: AddOne = Node(default=AddOne)

            def run(self, x):
                return self.second(self.first(x))

        assert Twice()(1) == 3
        print(created)
        """
    )
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    env.pop("THEFLOW_SETTINGS_MODULE", None)
    (tmp_path / "tmp").mkdir()
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_repeated_calls_keep_no_state() -> None:
    component = _Twice()
    for value in range(200):
        assert component(value) == value + 2
    # theflow writes run bookkeeping on every call; nothing of it may pile up.
    assert component.context._cache._data == {}
