"""Indexing as jobs: queued, run by workers, followed and cancelled by their owner.

:class:`JobService` is what the UI, the CLI and the HTTP API use; the queue behind it is
``JOB_QUEUE`` (:mod:`.queues`), a job's state its row (:mod:`.store`; :mod:`.view` as its
owner sees it), and running one :mod:`.runner`'s. docs/deploy.md ("Indexing jobs") says
how to run workers.
"""

from ragloom_app.jobs.service import JobLimitError, JobService, UnknownJobError
from ragloom_app.jobs.view import JobView

__all__ = ["JobLimitError", "JobService", "JobView", "UnknownJobError"]
