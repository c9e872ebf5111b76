"""The host KV slab cache (§5.2, Fig 16) on hand-checkable sizes."""

import pytest

from servesim.systems.aegaeon.hostcache import SlabCache

MiB = 2**20


def test_slabs_fill_then_open_and_fragmentation_at_peak():
    c = SlabCache(slab_bytes=4 * MiB, n_slabs=10, move_period_s=0)
    c.alloc(1, "a", MiB, 6, 0.0)             # 4 + 2 blocks: two slabs
    assert len(c.slabs) == 2
    rep = c.report()
    assert rep["all"]["allocated_bytes"] == 8 * MiB
    assert rep["all"]["fragmentation_pct"] == pytest.approx(25.0)
    c.alloc(2, "a", MiB, 2, 0.0)             # fills the second slab's free blocks
    assert len(c.slabs) == 2
    c.alloc(3, "b", 2 * MiB, 1, 0.0)         # another shape never shares a slab
    assert len(c.slabs) == 3
    rep = c.report()
    assert rep["all"]["allocated_bytes"] == 12 * MiB
    assert rep["b"]["fragmented_bytes"] == 2 * MiB and rep["a"]["fragmented_bytes"] == 0


def test_free_reclaims_empty_slabs_and_move_list_delays_it():
    c = SlabCache(slab_bytes=4 * MiB, n_slabs=10, move_period_s=0)
    c.alloc(1, "a", MiB, 4, 0.0)
    c.free(1, 1.0)
    assert c.slabs == {} and c.held == {}
    d = SlabCache(slab_bytes=4 * MiB, n_slabs=10, move_period_s=8.0)
    d.alloc(1, "a", MiB, 4, 0.0)
    d.free(1, 1.0)
    assert len(d.slabs) == 1               # on the move list until the daemon's tick at 8 s
    d.alloc(2, "a", MiB, 1, 7.9)
    assert len(d.slabs) == 2
    d.alloc(3, "a", MiB, 1, 8.0)
    assert len(d.slabs) == 1               # the first slab came back; 2 and 3 share the other


def test_overflow_is_counted():
    c = SlabCache(slab_bytes=4 * MiB, n_slabs=1, move_period_s=0)
    c.alloc(1, "a", MiB, 6, 0.0)
    assert c.overflow_blocks == 2
