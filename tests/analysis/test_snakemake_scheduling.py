"""The scheduling round skips Snakemake's input-size survey exactly where no scheduler reads it
(servesim.analysis.snakemake_scheduling, applied by the Snakefile)."""

import asyncio
from types import SimpleNamespace

import pytest

pytest.importorskip("snakemake")

from snakemake.scheduling.greedy import Scheduler as Greedy  # noqa: E402
from snakemake.scheduling.job_scheduler import JobScheduler  # noqa: E402

from servesim.analysis.snakemake_scheduling import sizes_unread, skip_unread_input_sizes  # noqa: E402


class _Path:
    """An input file as the survey sees it (exists, then size), counting the stats it costs."""

    stats = 0

    def __init__(self, name, size):
        self.name, self._size = name, size

    async def exists(self):
        _Path.stats += 1
        return True

    async def size(self):
        _Path.stats += 1
        return self._size


def _greedy(omit: bool):
    g = Greedy.__new__(Greedy)  # no DAG needed: only its type and settings are read
    g.settings = SimpleNamespace(omit_prioritize_by_temp_and_input=omit)
    return g


def test_only_the_greedy_scheduler_without_its_size_tie_break_reads_no_sizes():
    assert sizes_unread(_greedy(True), Greedy)
    assert not sizes_unread(_greedy(False), Greedy)  # its tie-break sorts by input size
    assert not sizes_unread(SimpleNamespace(settings=SimpleNamespace(omit_prioritize_by_temp_and_input=True)),
                            Greedy)  # the ILP scheduler (any other) reads them
    assert not sizes_unread(None, Greedy)


@pytest.mark.parametrize("omit, surveyed", [(True, False), (False, True)])
def test_the_patched_round_surveys_sizes_only_for_a_scheduler_that_reads_them(omit, surveyed):
    assert skip_unread_input_sizes() and skip_unread_input_sizes()  # in place, and idempotent
    sched = JobScheduler.__new__(JobScheduler)
    sched._scheduler, sched._input_sizes = _greedy(omit), {}
    _Path.stats = 0
    jobs = [SimpleNamespace(input=[_Path("a", 3), _Path("b", 5)])]
    asyncio.run(JobScheduler.update_input_sizes(sched, jobs))
    assert (_Path.stats > 0) == surveyed
    assert sorted(sched._input_sizes.values()) == ([3, 5] if surveyed else [])


def test_the_default_profile_picks_the_scheduler_that_reads_no_sizes():
    """Else the patch would never apply: the workflow's own runs go by the default profile."""
    import yaml

    from tests.conftest import ROOT

    profile = yaml.safe_load((ROOT / "profiles/default/config.yaml").read_text())
    assert profile["scheduler"] == "greedy"
    assert profile["scheduler-greedy-omit-prioritize-by-temp-and-input"] is True
