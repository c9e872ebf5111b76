"""Snakemake's scheduling round without the input sizes nothing reads (the Snakefile applies it).

Before every scheduling round Snakemake's `JobScheduler.update_input_sizes` stats every input of
every ready job (exists, then size; one asyncio task per file), for the schedulers' "largest
inputs first" tie-break. The workflow's profile picks the greedy scheduler with that tie-break
off (`scheduler-greedy-omit-prioritize-by-temp-and-input`: jobs go by `priority`, then in the
DAG's order), so the sizes are never read; yet on the quick target (291 jobs, py-spy on the 2-core
host, 2 Dec) collecting them was ~210 s of the Snakemake process's 373 CPU s, taken from the jobs
beside it, and on a slower file system (CI's machine) the process used 1,505 CPU s. With this,
the round skips it exactly when the active scheduler would not read it; otherwise (the ILP
scheduler, or the tie-break on) Snakemake's own method runs. A Snakemake without the method or
the setting is left as it is.
"""

from __future__ import annotations


def skip_unread_input_sizes() -> bool:
    """Patch `JobScheduler.update_input_sizes` (idempotent); True when the patch is in place."""
    try:
        from snakemake.scheduling.greedy import Scheduler as Greedy
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:
        return False
    original = getattr(JobScheduler, "update_input_sizes", None)
    if original is None:
        return False
    if getattr(original, "_servesim_skips_unread", False):
        return True

    async def update_input_sizes(self, jobs):
        if sizes_unread(getattr(self, "_scheduler", None), Greedy):
            return
        await original(self, jobs)

    update_input_sizes._servesim_skips_unread = True
    JobScheduler.update_input_sizes = update_input_sizes
    return True


def sizes_unread(scheduler, greedy_class) -> bool:
    """Whether `scheduler` picks jobs without the input sizes: the greedy one with its tie-break off."""
    settings = getattr(scheduler, "settings", None)
    return isinstance(scheduler, greedy_class) and bool(
        getattr(settings, "omit_prioritize_by_temp_and_input", False))
