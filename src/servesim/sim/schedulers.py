"""Iteration-level scheduler policies, behind a registry (the Vidur / BLIS pattern).

A policy decides, at each iteration boundary, what the next iteration computes: which decoding
requests decode, which prefill chunks run, whom to admit from the waiting queue and whom to
preempt. It mutates the instance through a small internal surface (``inst.ds`` decode set,
``inst.waiting``, ``inst.running``, ``inst.prefilling``, ``inst.free``/``inst.used``,
``inst._admit``, ``inst._preempt``, ``inst._chunks``, ``inst._dec``) and never touches time.

Policies (``get_policy(name, **options)``):

- ``vllm-v1`` (default): vLLM V1 engine. Running requests first (decodes one token each, a
  partially prefilled prompt its next chunk), then waiting requests FCFS into the remaining
  ``max_num_batched_tokens`` with chunked prefill, while ``len(running) < max_num_seqs`` and the
  blocks fit; no admission in an iteration that preempted. Preemption by recompute of the most
  recently admitted running request (``running.pop()``), which goes to the front of the queue.
- ``vllm-v0``: vLLM 0.6 V0 default scheduler (chunked prefill off): prefill-prioritised. If any
  waiting prompts fit (token budget, ``max_num_seqs``, blocks above a 1% watermark), the
  iteration runs only those prompts, whole; otherwise it decodes all running requests, preempting
  from the back by recompute when blocks run out.
- ``orca``: ORCA / Splitwise-style iteration batching of whole prompts (SageServe's simulator):
  every iteration decodes all running requests and adds the waiting prompts that fit, FCFS, up
  to ``max_num_seqs``; no token cap unless ``max_num_batched_tokens`` is set. ``reserve="full"``
  (default) reserves KV for prompt+output at admission (no preemption ever);
  ``reserve="incremental"`` grows KV per token and preempts like vLLM.

Adding a policy: subclass :class:`SchedulerPolicy`, implement ``schedule`` and
``head_admissible`` (used by the fast mode to know a decode run is steady), and ``@register``.
"""

from __future__ import annotations

from ..registry import Registry
from .kvcache import cdiv

#: ``name -> SchedulerPolicy class`` (scenario ``models.<m>.engine.policy``)
SCHEDULERS: Registry = Registry("scheduler policy")
_REGISTRY = SCHEDULERS  # the name systems code used before the registry helper


def register(name: str):
    """Class decorator adding a policy to the registry under ``name`` (a taken name is an error)."""
    return SCHEDULERS.register(name)


def policy_names() -> list[str]:
    """Names of the registered policies."""
    return SCHEDULERS.names()


def get_policy(name: str, **options) -> "SchedulerPolicy":
    """Instantiate a registered policy; unknown names or options raise ValueError."""
    cls = SCHEDULERS.get(name)
    try:
        return cls(**options)
    except TypeError as exc:
        raise ValueError(f"bad option for scheduler policy {name!r}: {exc}") from None


class SchedulerPolicy:
    """Base class. ``reserves_full``: KV for the whole request is reserved at admission."""

    name = "abstract"
    reserves_full = False

    def schedule(self, inst) -> None:
        """Plan the next iteration on ``inst`` (see module docstring)."""
        raise NotImplementedError

    def head_admissible(self, inst) -> bool:
        """Would the next iteration admit the waiting head? Called with the state of the next
        boundary when the batch is all-decode; must be monotone along a decode run (once False,
        it stays False while only decodes run and nothing finishes)."""
        raise NotImplementedError

    def blocks_needed_max(self, r, block_size: int) -> int:
        """Most KV blocks ``r`` ever holds at once (for the can-never-run check)."""
        if r.output == 0:
            return cdiv(r.prompt, block_size)
        return cdiv(r.prompt + r.output - 1, block_size)

    def never_fits(self, inst, r) -> str:
        """A reason string if ``r`` can never run on ``inst``'s cache, else ""."""
        need = self.blocks_needed_max(r, inst.cfg.block_size)
        if need > inst.cfg.num_blocks:
            return f"needs {need} KV blocks > cache capacity {inst.cfg.num_blocks}"
        return ""


def _ordered_running(inst, budget: int) -> tuple[int, bool]:
    """Exact vLLM running-queue pass with recompute preemption.

    Walk ``running`` in admission order; each request takes its tokens (1 for a decode, the next
    chunk for a prefill) and the blocks for them; if blocks run short, preempt the last running
    request, repeatedly, until they fit, or until the request preempted is this one (then stop).
    Returns (remaining budget, whether anyone was preempted).
    """
    ds = inst.ds
    bs = inst.cfg.block_size
    run = list(inst.running)
    i = 0
    preempted = False
    chunks = inst._chunks
    while i < len(run) and budget > 0:
        r = run[i]
        if r.dec:
            ntok = 1
            need = ds.needs_block(r)
        else:
            ntok = min(r.num_tokens - r.computed, budget)
            need = cdiv(r.computed + ntok, bs) - r.held
        ok = True
        while need > inst.num_blocks - inst.used:
            v = run.pop()
            inst._preempt(v)
            preempted = True
            if v is r:
                ok = False
                break
        if not ok:
            break
        if r.dec:
            inst.used += ds.alloc_one(r)
        else:
            inst.used += need
            r.held += need
            chunks.append((r, ntok))
        budget -= ntok
        i += 1
    return budget, preempted


_TOO_LONG = "recompute prefill exceeds max_num_batched_tokens (whole prompts only)"


def _head_tokens(r) -> int:
    return r.num_tokens - r.computed


@register("vllm-v1")
class VllmV1(SchedulerPolicy):
    """vLLM V1 scheduler (see module docstring). Options: ``chunked_prefill`` (default True)."""

    def __init__(self, chunked_prefill: bool = True) -> None:
        self.chunked = bool(chunked_prefill)

    def never_fits(self, inst, r) -> str:
        reason = super().never_fits(inst, r)
        if not reason and not self.chunked and r.prompt > inst.cfg.max_num_batched_tokens:
            reason = (f"prompt_tokens {r.prompt} > max_num_batched_tokens "
                      f"{inst.cfg.max_num_batched_tokens} (chunked prefill off)")
        return reason

    def schedule(self, inst) -> None:
        cfg = inst.cfg
        bs = cfg.block_size
        budget = cfg.max_num_batched_tokens
        ds = inst.ds
        preempted = False
        if not inst.prefilling and ds.demand() <= inst.num_blocks - inst.used:
            inst.used += ds.alloc_all()
            budget -= ds.n
        else:
            budget, preempted = _ordered_running(inst, budget)
        if not preempted:
            W = inst.waiting
            running = inst.running
            maxs = cfg.max_num_seqs
            chunks = inst._chunks
            while W and budget > 0 and len(running) < maxs:
                r = W[0]
                ntok = _head_tokens(r)
                if not self.chunked and ntok > cfg.max_num_batched_tokens:
                    inst._drop_head(_TOO_LONG)
                    continue
                if not self.chunked and ntok > budget:
                    break
                if ntok > budget:
                    ntok = budget
                need = cdiv(r.computed + ntok, bs) - r.held
                if need > inst.num_blocks - inst.used:
                    break
                inst._admit()
                inst.used += need
                r.held += need
                chunks.append((r, ntok))
                budget -= ntok
        inst._dec = ds.n > 0

    def head_admissible(self, inst) -> bool:
        W = inst.waiting
        if not W:
            return False
        cfg = inst.cfg
        if len(inst.running) >= cfg.max_num_seqs:
            return False
        budget = cfg.max_num_batched_tokens - inst.ds.n
        if budget <= 0:
            return False
        r = W[0]
        ntok = _head_tokens(r)
        if not self.chunked and ntok > cfg.max_num_batched_tokens:
            return True  # it will be dropped: not steady
        if not self.chunked and ntok > budget:
            return False
        ntok = min(ntok, budget)
        need = cdiv(r.computed + ntok, cfg.block_size) - r.held
        return need <= inst.num_blocks - inst.used - inst.ds.demand()


@register("vllm-v0")
class VllmV0(SchedulerPolicy):
    """vLLM 0.6 V0 default scheduler (see module docstring). Option ``watermark`` (0.01)."""

    def __init__(self, watermark: float = 0.01) -> None:
        if not 0 <= watermark < 1:
            raise ValueError(f"watermark={watermark} must be in [0, 1)")
        self.watermark = float(watermark)

    def _wm(self, inst) -> int:
        return int(self.watermark * inst.cfg.num_blocks)

    def never_fits(self, inst, r) -> str:
        reason = super().never_fits(inst, r)
        if reason:
            return reason
        need = cdiv(r.prompt, inst.cfg.block_size)
        if inst.cfg.num_blocks - need < self._wm(inst):
            return f"prompt needs {need} KV blocks, more than capacity minus watermark"
        if r.prompt > inst.cfg.max_num_batched_tokens:
            return (f"prompt_tokens {r.prompt} > max_num_batched_tokens "
                    f"{inst.cfg.max_num_batched_tokens} (chunked prefill off)")
        return ""

    def _admit_prefills(self, inst, dry: bool) -> bool:
        cfg = inst.cfg
        bs = cfg.block_size
        W = inst.waiting
        budget = cfg.max_num_batched_tokens
        seqs = len(inst.running)
        wm = self._wm(inst)
        admitted = False
        while W:
            r = W[0]
            ntok = _head_tokens(r)
            if ntok > cfg.max_num_batched_tokens:
                # a recomputed request outgrew the prompt limit: vLLM V0 ignores it
                if dry:
                    return True
                inst._drop_head(_TOO_LONG)
                continue
            if ntok > budget or seqs >= cfg.max_num_seqs:
                break
            need = cdiv(r.computed + ntok, bs) - r.held
            if inst.num_blocks - inst.used - need < wm:
                break
            if dry:
                return True
            inst._admit()
            inst.used += need
            r.held += need
            inst._chunks.append((r, ntok))
            budget -= ntok
            seqs += 1
            admitted = True
        return admitted

    def schedule(self, inst) -> None:
        if inst.waiting and self._admit_prefills(inst, dry=False):
            inst._dec = False
            return
        ds = inst.ds
        if ds.demand() <= inst.num_blocks - inst.used:
            inst.used += ds.alloc_all()
        else:
            _ordered_running(inst, 1 << 62)
        inst._dec = ds.n > 0

    def head_admissible(self, inst) -> bool:
        return bool(inst.waiting) and self._admit_prefills(inst, dry=True)


@register("orca")
class Orca(SchedulerPolicy):
    """ORCA-style whole-prompt iteration batching (see module docstring)."""

    def __init__(self, reserve: str = "full") -> None:
        if reserve not in ("full", "incremental"):
            raise ValueError(f"reserve={reserve!r} must be 'full' or 'incremental'")
        self.reserve = reserve
        self.reserves_full = reserve == "full"

    def blocks_needed_max(self, r, block_size: int) -> int:
        if self.reserves_full:
            return cdiv(r.prompt + r.output, block_size)
        return super().blocks_needed_max(r, block_size)

    def never_fits(self, inst, r) -> str:
        reason = super().never_fits(inst, r)
        b = inst.cfg.max_num_batched_tokens
        if not reason and b is not None and r.prompt > b:
            reason = f"prompt_tokens {r.prompt} > max_num_batched_tokens {b} (whole prompts only)"
        return reason

    def _need(self, r, ntok: int, bs: int) -> int:
        if self.reserves_full:
            return cdiv(r.prompt + r.output, bs) - r.held
        return cdiv(r.computed + ntok, bs) - r.held

    def _budget(self, inst) -> int:
        b = inst.cfg.max_num_batched_tokens
        return (1 << 62) if b is None else b

    def schedule(self, inst) -> None:
        ds = inst.ds
        budget = self._budget(inst)
        preempted = False
        if ds.demand() <= inst.num_blocks - inst.used:
            inst.used += ds.alloc_all()
            budget -= ds.n
        else:
            budget, preempted = _ordered_running(inst, budget)
        if not preempted:
            cfg = inst.cfg
            W = inst.waiting
            while W and len(inst.running) < cfg.max_num_seqs:
                r = W[0]
                ntok = _head_tokens(r)
                if ntok > self._budget(inst):
                    inst._drop_head(_TOO_LONG)
                    continue
                if ntok > budget:
                    break
                need = self._need(r, ntok, cfg.block_size)
                if need > inst.num_blocks - inst.used:
                    break
                inst._admit()
                inst.used += need
                r.held += need
                inst._chunks.append((r, ntok))
                budget -= ntok
        inst._dec = ds.n > 0

    def head_admissible(self, inst) -> bool:
        W = inst.waiting
        if not W or len(inst.running) >= inst.cfg.max_num_seqs:
            return False
        r = W[0]
        ntok = _head_tokens(r)
        if ntok > self._budget(inst):
            return True  # it will be dropped: not steady
        if ntok > self._budget(inst) - inst.ds.n:
            return False
        need = self._need(r, ntok, inst.cfg.block_size)
        return need <= inst.num_blocks - inst.used - inst.ds.demand()
