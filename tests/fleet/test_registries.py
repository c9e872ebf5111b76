"""Registries that resolve: one helper behind every kind of component a scenario names, and a
user's own autoscaler, registered in the user's file, run from a scenario YAML by name."""

import json
import textwrap

import pandas as pd
import pytest
import yaml

from servesim.cli import main as servesim_main
from servesim.fleet import load_scenario, parse_scenario
from servesim.fleet.scenario import ScenarioError
from servesim.perf.registry import BACKENDS
from servesim.policies import CONTROLLERS, GLOBAL_ROUTERS, ROUTERS, ReactiveAutoscaler
from servesim.registry import OptionsError, Registry, UnknownName
from servesim.sim.schedulers import SCHEDULERS


def test_registry_rejects_duplicates_and_lists_known_names():
    reg = Registry("widget")

    @reg.register("a")
    class A:
        def __init__(self, size: int, colour: str = "red") -> None:
            self.size, self.colour = size, colour

    assert reg.get("a") is A and A.name == "a" and reg.names() == ["a"] and "a" in reg and "b" not in reg
    reg.register("a")(A)  # the same object again (a re-import) is fine

    class B:
        pass

    with pytest.raises(ValueError, match=r"widget 'a' is already registered to .*A; cannot register .*B"):
        reg.register("a")(B)
    assert reg.get("a") is A
    with pytest.raises(UnknownName, match=r"unknown widget 'c'; known: \['a'\]"):
        reg.get("c")
    with pytest.raises(KeyError):  # a mapping's KeyError too
        reg["c"]
    # options checked against the constructor, errors naming the key path
    assert reg.create("a", {"size": 3}).size == 3
    with pytest.raises(OptionsError) as e:
        reg.create("a", {"colour": "blue", "shape": 1}, where="widgets.0")
    assert "widgets.0.shape: unknown option for widget 'a'; allowed: ['colour', 'size']" in str(e.value)
    assert "widgets.0.size: required option of widget 'a' is missing" in str(e.value)


@pytest.mark.parametrize("reg", [ROUTERS, GLOBAL_ROUTERS, CONTROLLERS, SCHEDULERS, BACKENDS],
                         ids=lambda r: r.kind)
def test_every_component_kind_uses_the_registry(reg):
    assert isinstance(reg, Registry) and len(reg) >= 1
    name = reg.names()[0]
    with pytest.raises(ValueError, match="already registered"):
        reg.register(name)(type("Impostor", (), {}))
    assert reg.get(name).__name__ != "Impostor"


def test_reactive_options_are_validated_by_the_component():
    a = CONTROLLERS.create("reactive", {"period_s": "1min", "up": 0.8}, where="autoscaler")
    assert isinstance(a, ReactiveAutoscaler) and a.period_s == 60.0 and a.up == 0.8 and a.down == 0.3
    with pytest.raises(OptionsError, match="autoscaler.metric: Input should be 'kv' or 'outstanding'"):
        CONTROLLERS.create("reactive", {"metric": "vibes"}, where="autoscaler")


PLUGIN = '''
from dataclasses import dataclass

from servesim.fleet import Scale
from servesim.policies import register_controller


@register_controller("{name}")
@dataclass
class AddAt:
    """Adds `delta` instances to every endpoint once, at the first tick at or after `at_s`."""

    at_s: float
    delta: int = 1
    period_s: float = 5.0
    done: bool = False

    def act(self, view):
        if self.done or view.now < self.at_s:
            return []
        self.done = True
        return [Scale(m, r, self.delta) for m, r in view.endpoints()]
'''


def scenario(name: str, **autoscaler) -> dict:
    return {
        "name": "plugin-scaler",
        "seed": 5,
        "plugins": ["my_scaler.py"],
        "workload": {"generator": "poisson", "duration_s": 60, "streams": [
            {"model": "m", "region": "r", "rate_rps": 2.0, "prompt_tokens": {"mean": 200, "cv": 0.5},
             "output_tokens": {"mean": 50, "cv": 0.5}}]},
        "regions": [{"name": "r"}],
        "models": {"m": {"engine": {"kv_capacity_tokens": 50000},
                         "lead": {"provision_s": 5, "load_s": 5}}},
        "endpoints": [{"model": "m", "region": "r", "instances": 1, "max_instances": 4}],
        "autoscaler": {"name": name, **autoscaler},
    }


def test_user_autoscaler_registered_in_own_file_runs_by_name(tmp_path, capsys):
    (tmp_path / "my_scaler.py").write_text(PLUGIN.format(name="test-user-add-at"))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario("test-user-add-at", at_s=20, delta=2)))
    out = tmp_path / "out"
    assert servesim_main(["simulate", str(path), "-o", str(out), "--no-progress"]) == 0
    assert "test-user-add-at" in CONTROLLERS
    life = pd.read_parquet(out / "lifecycle.parquet")
    hours = pd.read_parquet(out / "instance_hours.parquet")
    summary = json.loads((out / "summary.json").read_text())
    # the user's scaler asked for two more instances at t = 20 s: requested at 20, ready at 30
    assert life["instance"].nunique() == 3
    ready = life[life["to_state"] == "ready"].set_index("instance")["time_s"]
    assert ready.to_dict() == {"r/i0": 0.0, "r/i1": 30.0, "r/i2": 30.0}
    by_state = hours.groupby("state")["hours"].sum()
    assert by_state["provisioning"] == pytest.approx(2 * 5 / 3600) == by_state["loading"]
    assert summary["all"]["states"] == {"finished": summary["all"]["requests"]}
    # the same file named again (a second load) does not register the scaler twice
    assert load_scenario(path).autoscaler.name == "test-user-add-at"


def test_user_component_options_and_plugin_errors_name_the_key(tmp_path):
    (tmp_path / "my_scaler.py").write_text(PLUGIN.format(name="test-user-add-at-errors"))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario("test-user-add-at-errors", delta=2, when=3)))
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    msg = str(e.value)
    assert f"{path}: autoscaler.when: unknown option for autoscaler 'test-user-add-at-errors'" in msg
    assert f"{path}: autoscaler.at_s: required option of autoscaler 'test-user-add-at-errors' is missing" in msg
    d = scenario("no-such-scaler", at_s=1)
    d["plugins"] = []
    with pytest.raises(ScenarioError, match=r"s.yaml: autoscaler.name: unknown autoscaler 'no-such-scaler'; "
                                            r"known: \[.*'reactive'"):
        parse_scenario(d, "s.yaml")
    d["plugins"] = ["absent.py"]
    with pytest.raises(ScenarioError, match=r"s.yaml: plugins.0: .*absent.py does not exist"):
        parse_scenario(d, "s.yaml", tmp_path)
    (tmp_path / "broken.py").write_text(textwrap.dedent("raise RuntimeError('boom')\n"))
    d["plugins"] = ["broken.py"]
    with pytest.raises(ScenarioError, match=r"plugins.0: importing 'broken.py' failed: RuntimeError: boom"):
        parse_scenario(d, "s.yaml", tmp_path)


def test_global_router_named_with_options_and_workload_optional():
    d = scenario("reactive")
    d.pop("plugins")
    d["global_router"] = {"name": "preference", "threshold": 1.5}
    with pytest.raises(ScenarioError, match="global_router.threshold: Input should be less than or equal to 1"):
        parse_scenario(d, "s.yaml")
    d["global_router"] = {"name": "local"}
    d.pop("workload")
    sc = parse_scenario(d, "s.yaml")  # a caller that brings its own request table needs no workload key
    assert sc.workload is None
    from servesim.fleet import run_scenario

    with pytest.raises(ScenarioError, match="has no workload"):
        run_scenario(sc)


def test_options_without_a_model_are_type_checked_without_coercion():
    """A component without an ``Options`` model: its annotated bool/int/float/str options are
    checked as given (``"no"`` for a bool would be truthy; ``True`` for a number would be 1)."""
    from dataclasses import dataclass

    reg = Registry("widget")

    @reg.register("w")
    @dataclass
    class W:
        on: bool = True
        n: int = 1
        rate: float = 1.0
        label: str = "x"
        anything: object = None

    assert reg.create("w", {"on": False, "n": 3, "rate": 2, "label": "y", "anything": "no"}).rate == 2
    assert reg.create("w", {"n": 4.0}).n == 4.0  # a whole number written as a float
    for opts, needle in [({"on": "no"}, "widget.on: expected true or false, got 'no'"),
                         ({"n": True}, "widget.n: expected a number, got True"),
                         ({"n": 2.5}, "widget.n: expected a whole number, got 2.5"),
                         ({"rate": "0.7"}, "widget.rate: expected a number, got '0.7'"),
                         ({"label": 3}, "widget.label: expected a string, got 3")]:
        with pytest.raises(OptionsError) as e:
            reg.create("w", opts, where="widget")
        assert needle in str(e.value)


def test_unregister_removes_a_name_and_refuses_an_unknown_one():
    reg = Registry("widget")

    @reg.register("a")
    class A:
        pass

    reg.unregister("a")
    assert "a" not in reg and len(reg) == 0
    with pytest.raises(UnknownName, match="unknown widget 'a'"):
        reg.unregister("a")
