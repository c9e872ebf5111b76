import numpy as np
import pytest

from servesim.systems.sageserve.ilp import AllocationProblem, ILPError, SOLVERS, random_problem, solve


def _one(n, rho, theta=100.0, alpha=10.0, sigma=150.0, **kw):
    return AllocationProblem(n=np.array([[[n]]]), rho=np.array([[rho]], dtype=float),
                             theta=np.array([[theta]]), alpha=np.array([alpha]),
                             sigma=np.array([[sigma]]), **kw)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("lin", ["max", "bigm"])
def test_single_endpoint_scales_to_ceil_of_demand(solver, lin):
    # demand 730 at 100 per instance needs 8; from 5 that is +3: cost 10*3 + 150*3
    r = solve(_one(5, [[400.0, 730.0, 650.0]][0]), solver=solver, linearisation=lin)
    assert r.delta.item() == 3
    assert r.objective == pytest.approx(480.0)
    # from 12 it drops to 8: gamma = -40, mu = 0
    r = solve(_one(12, [400.0, 730.0]), solver=solver, linearisation=lin)
    assert r.delta.item() == -4 and r.objective == pytest.approx(-40.0)


def test_epsilon_and_buffer():
    # eps = 0.5 of peak 730 -> 365 -> 4 instances
    assert solve(_one(2, [730.0], epsilon=0.5, global_constraint=False)).delta.item() == 2
    # a buffer of 75 pushes 730 to 805 -> 9
    assert solve(_one(2, [730.0], buffer=np.array([[75.0]]))).delta.item() == 7


def test_zero_demand_releases_everything_unless_floor():
    assert solve(_one(6, [0.0])).delta.item() == -6  # (3) delta >= -n binds
    assert solve(_one(6, [0.0], min_instances=2)).delta.item() == -4


def test_global_constraint_uses_rerouting_with_epsilon():
    # two regions, one model; region demand 500 and 100, eps 0.5: per region >= 250 / 50.
    # global: total >= 600 -> 6 instances overall; cheapest keeps what exists (no start cost).
    p = AllocationProblem(n=np.array([[[1], [5]]]), rho=np.array([[[500.0], [100.0]]]),
                          theta=np.array([[100.0]]), alpha=np.array([10.0]), sigma=np.array([[150.0]]),
                          epsilon=0.5)
    r = solve(p)
    after = p.n + r.delta
    assert after[0, 0, 0] >= 3 and after[0, 1, 0] >= 1 and after.sum() == 6
    assert r.delta[0, 0, 0] == 2 and r.delta[0, 1, 0] == -2  # region 0 needs 3; region 1 keeps 3 (no start cost)
    p.global_constraint = False
    assert (p.n + solve(p).delta).ravel().tolist() == [3, 1]


def test_cheaper_gpu_type_chosen():
    # g = 2: type 0 gives 100/instance at cost 10, type 1 gives 300 at cost 20 (cheaper per token)
    p = AllocationProblem(n=np.zeros((1, 1, 2), int), rho=np.array([[[600.0]]]),
                          theta=np.array([[100.0, 300.0]]), alpha=np.array([10.0, 20.0]),
                          sigma=np.array([[0.0, 0.0]]))
    assert solve(p).delta.ravel().tolist() == [0, 2]


def test_capacity_makes_it_infeasible_with_clear_error():
    p = _one(2, [730.0], capacity=np.array([5]))
    with pytest.raises(ILPError, match="Infeasible"):
        solve(p)


def test_bad_shapes_are_named():
    p = _one(2, [730.0])
    p.theta = np.array([[1.0, 2.0]])
    with pytest.raises(ILPError, match="theta"):
        solve(p)
    with pytest.raises(ILPError, match="epsilon"):
        solve(_one(2, [1.0], epsilon=0.0))


def test_solvers_agree_on_random_small_instance_and_lp_bound():
    p = random_problem(4, 3, 1, seed=1)
    objs = [solve(p, solver=s).objective for s in SOLVERS]
    assert objs[0] == pytest.approx(objs[1])
    assert solve(p, relax=True).objective <= objs[0] + 1e-6


def _highs_mip_with_default_threads():
    """What another HiGHS user in the same process may do first: a MIP on HiGHS's default threads,
    which fixes the size of its process-wide scheduler."""
    import highspy

    highspy.Highs.resetGlobalScheduler(True)  # as in a fresh process
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.addCol(1.0, 0, 1, 0, [], [])
    h.changeColIntegrality(0, highspy.HighsVarType.kInteger)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal


def test_highs_solve_is_independent_of_earlier_highs_use_in_the_process():
    # the cause of "allocation ILP is Not Solved (solver highs)" in a full test run: an earlier
    # HiGHS solve (OServe's flows) sized the global scheduler differently from threads=1
    import servesim.systems.lp as lp

    lp._highs_threads = None
    _highs_mip_with_default_threads()
    lp._highs_threads = 1  # as if our helper had been used before the foreign solve
    with pytest.raises(ILPError, match="Not Solved"):  # the failure mode this guards against
        solve(random_problem(4, 3, 1, seed=1), solver="highs")
    lp._highs_threads = None  # the helper's real state: it cannot know what ran before it
    _highs_mip_with_default_threads()
    assert solve(random_problem(4, 3, 1, seed=1), solver="highs").status == "Optimal"
    assert solve(random_problem(4, 3, 1, seed=1), solver="highs", threads=2).status == "Optimal"
    assert solve(random_problem(4, 3, 1, seed=1), solver="highs", threads=1).status == "Optimal"
