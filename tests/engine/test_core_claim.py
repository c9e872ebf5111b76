"""servesim.engine.core_claim: the engine's cores to itself, the scheduler's other jobs on the rest."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                                reason="needs CPU affinity and at least two cores")

CODE = """
import json, os, sys
from servesim.engine.core_claim import claim
sched, sib, last = (int(x) for x in sys.argv[1:4])
msgs, seen = [], {}
with claim([last], sched, report=msgs.append):
    seen = {"sched": sorted(os.sched_getaffinity(sched)), "sib": sorted(os.sched_getaffinity(sib)),
            "me": sorted(os.sched_getaffinity(0))}
print(json.dumps({**seen, "msgs": msgs}))
"""


def _job(scheduler: int, sibling: int, last: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CODE, str(scheduler), str(sibling), str(last)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_claim_moves_the_scheduler_and_its_other_jobs_off_the_engines_core_and_back():
    have = sorted(os.sched_getaffinity(0))
    sibling = subprocess.Popen(["sleep", "60"])  # another job of this "scheduler" (the test process)
    try:
        seen = _job(os.getpid(), sibling.pid, have[-1])
        assert seen["sched"] == seen["sib"] == have[:-1]  # during the claim: off the engine's core
        assert seen["me"] == have  # the calibration's own process is left alone
        assert "moved to cores" in seen["msgs"][0] and "released" in seen["msgs"][-1]
        # after it: back where they were
        assert sorted(os.sched_getaffinity(0)) == have and sorted(os.sched_getaffinity(sibling.pid)) == have
    finally:
        sibling.kill()


def test_a_pid_that_is_not_an_ancestor_is_never_touched():
    have = sorted(os.sched_getaffinity(0))
    other = subprocess.Popen(["sleep", "60"])
    try:
        seen = _job(other.pid, other.pid, have[-1])  # `other` is no ancestor of the job
        assert seen["sched"] == have and "not an ancestor" in seen["msgs"][0]
    finally:
        other.kill()
