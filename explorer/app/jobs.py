"""Long work (probe sweeps, training) in a background thread, with progress and cancel.

The job class lives in :mod:`explorer.runtime.jobs` (analysis uses it too, and must
not import the app); it is re-exported here for the tabs.

>>> from explorer.app.jobs import Job
>>> job = Job("count", lambda ctx: sum(range(10))).start()
>>> job.wait(5), job.status
(45, 'done')
"""

from __future__ import annotations

from explorer.runtime.jobs import JOB_STATUSES, Job, JobCancelled, JobContext

__all__ = ["JOB_STATUSES", "Job", "JobCancelled", "JobContext"]
