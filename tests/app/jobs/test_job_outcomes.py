"""What a job records of its files' outcomes, and what that costs: the writes of a job's
outcomes grow with its size, not its square, and one job records MAX_JOB_OUTCOMES of them,
the rest counted. Before, every outcome rewrote the whole list: a 97 KB zip of 1,000
failing members wrote 101 MB, and four such zips 1.6 GB."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs.runner import JobRunner
from ragloom_app.jobs.store import JobStore
from ragloom_app.jobs.view import MAX_JOB_OUTCOMES
from tests.helpers.jobs import staged_job


def test_a_job_writes_its_outcomes_in_linear_bytes_and_records_the_first_ones(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = MAX_JOB_OUTCOMES + 200  # in two archives: one holds 1,000 members at most
    files = []
    for part, numbers in enumerate((range(0, 700), range(700, members))):
        archive = tmp_path / f"bundle{part}.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
            for n in numbers:  # unsupported: each fails at once, spending nothing
                bundle.writestr(f"m{n:05d}.exe", b"x")
        files.append((archive.name, archive))
    job_id = staged_job(app, files, "outcomes")
    written: list[int] = []
    progress, finish = JobStore.progress, JobStore.finish

    def counting_progress(self: JobStore, job_id: str, *args: Any, **values: Any) -> bool:
        written.append(len(json.dumps(values.get("outcomes") or [])))
        return progress(self, job_id, *args, **values)

    def counting_finish(self: JobStore, job_id: str, *args: Any, **values: Any) -> bool:
        written.append(len(json.dumps(values.get("outcomes") or [])))
        return finish(self, job_id, *args, **values)

    monkeypatch.setattr(JobStore, "progress", counting_progress)
    monkeypatch.setattr(JobStore, "finish", counting_finish)
    assert JobRunner(app, "w").run(job_id) == JobStatus.DONE
    done = JobStore(app.engine).get(job_id)
    assert done is not None
    assert len(done.outcomes) == MAX_JOB_OUTCOMES and done.files_done == members
    assert done.outcomes_not_listed == 200
    assert done.outcomes[-1]["file"] == f"bundle1.zip/m{MAX_JOB_OUTCOMES - 1:05d}.exe"
    final = len(json.dumps(done.outcomes))
    # Every write rewrites the list: each once it grew by a quarter, about 5 times its size
    # in all, and once more as the job ends (before: every outcome, 600 times its size).
    assert sum(written) <= 6 * final, (sum(written), final, len(written))
    # The list of jobs does not read them; one job has them.
    (listed,) = JobStore(app.engine).jobs(with_outcomes=False)
    assert listed.outcomes == [] and listed.files_done == members
