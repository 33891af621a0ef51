"""The saxml model publication Job's program (workloads/saxml/publish_models.py), run against a fake Sax HTTP server.

The fake follows the server's API as GoogleCloudPlatform/ai-on-gke@e997f425:tools/saxml-on-gke/httpserver/README.md
"Saxml HTTP Server APIs" documents it: /listall {sax_cell} -> [model names], /publish {model, model_path,
checkpoint, replicas} -> {model}, /unpublish {model} -> {model}, /update {model, model_path, checkpoint, replicas},
/listcell {model} -> {model, model_path, checkpoint, max_replicas, active_replicas}; and the admin server's rule for
an update (google/saxml@v1.1.0:saxml/admin/validator.go ValidateModelUpdate: the model path and the checkpoint path
cannot change; saxutil's update changes the requested replicas, saxml/bin/saxutil_cmd_admin.go UpdateCmd).
The text of the error a duplicate publish returns is not documented; the program takes any error that says
"already" for it (tests/test_saxml.py runs the whole file over real HTTP, too).
"""

from __future__ import annotations

import io
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT
from workloads.saxml import publish_models
from workloads.saxml.publish_models import Publisher

CELL = "/sax/c"


def http_error(code: int, text: str) -> urllib.error.HTTPError:
    return urllib.error.HTTPError("http://sax", code, "error", None, io.BytesIO(text.encode()))


class FakeSax:
    """The Sax HTTP server of one cell, in memory: a published model gains one loaded replica per /listcell."""

    def __init__(self, published: tuple[str, ...] = (), failures: dict[str, list[Exception]] | None = None):
        self.models = {
            name: {"model": name, "model_path": "a.B", "checkpoint": "None", "max_replicas": 1, "active_replicas": 1}
            for name in published
        }
        self.failures = failures or {}
        self.calls: list[tuple[str, str]] = []
        self.stuck: set[str] = set()  # models whose replicas never load

    def __call__(self, method: str, path: str, body: Any) -> Any:
        self.calls.append((path, body["model"] if body and "model" in body else ""))
        if self.failures.get(path):
            raise self.failures[path].pop(0)
        if path == "/":
            return {}
        if path == "/listall":
            return sorted(name for name in self.models if name.startswith(body["sax_cell"] + "/"))
        if path == "/publish":
            if body["model"] in self.models:
                raise http_error(400, f"model {body['model']} already exists")
            self.models[body["model"]] = {
                "model": body["model"],
                "model_path": body["model_path"],
                "checkpoint": body["checkpoint"],
                "max_replicas": body["replicas"],
                "active_replicas": 0,
            }
            return {"model": body["model"]}
        if path == "/unpublish":
            del self.models[body["model"]]
            return {"model": body["model"]}
        state = self.models[body["model"]]
        if path == "/update":
            for key, what in (("model_path", "model path"), ("checkpoint", "checkpoint path")):
                if body[key] != state[key]:
                    raise http_error(400, f"invalid model update: {what} can't be changed")
            state["max_replicas"] = body["replicas"]
            state["active_replicas"] = min(state["active_replicas"], body["replicas"])
            return dict(body)
        if body["model"] not in self.stuck:
            state["active_replicas"] = min(state["active_replicas"] + 1, state["max_replicas"])
        return dict(state)


class Clock:
    """Time that passes only when the program sleeps."""

    def __init__(self) -> None:
        self.now, self.sleeps = 1000.0, []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def publisher(sax: FakeSax, clock: Clock, timeout: float = 3300) -> Publisher:
    return Publisher(sax, deadline=clock.now + timeout, clock=clock.time, sleep=clock.sleep)


def model(name: str, replicas: int = 1) -> dict[str, Any]:
    return {"model": f"{CELL}/{name}", "model_path": "a.B", "checkpoint": "None", "replicas": replicas}


def test_the_cell_ends_with_exactly_the_wanted_models_all_loaded(capsys):
    sax, clock = FakeSax(published=(f"{CELL}/keep", f"{CELL}/old", "/sax/other/m")), Clock()
    publisher(sax, clock).sync(CELL, [model("keep"), model("new", replicas=2)])
    assert set(sax.models) == {f"{CELL}/keep", f"{CELL}/new", "/sax/other/m"}  # another cell's model is not ours
    assert sax.calls == [
        ("/", ""),
        ("/listall", ""),
        ("/listcell", f"{CELL}/keep"),  # published: is it what is wanted?
        ("/publish", f"{CELL}/new"),
        ("/unpublish", f"{CELL}/old"),
        ("/listcell", f"{CELL}/keep"),
        ("/listcell", f"{CELL}/new"),  # 1/2 loaded: poll again
        ("/listcell", f"{CELL}/new"),
    ]
    assert clock.sleeps == [15.0]
    out = capsys.readouterr().out
    assert f"{CELL}/keep: already published as wanted" in out and f"{CELL}/new: 1/2 replicas loaded" in out
    assert out.endswith("cell in sync\n")


def test_a_model_published_meanwhile_counts_as_published(capsys):
    """Another publisher wins the race between /listall and /publish: the refusal is not retried, the Job goes on."""

    class Racing(FakeSax):
        def __call__(self, method: str, path: str, body: Any) -> Any:
            if path == "/publish":
                loaded = {"max_replicas": body["replicas"], "active_replicas": body["replicas"]}
                self.models.setdefault(
                    body["model"], {**{k: body[k] for k in ("model", "model_path", "checkpoint")}, **loaded}
                )
            return super().__call__(method, path, body)

    sax, clock = Racing(), Clock()
    publisher(sax, clock).sync(CELL, [model("new")])
    assert sax.calls.count(("/publish", f"{CELL}/new")) == 1 and clock.sleeps == []
    out = capsys.readouterr().out
    assert f"{CELL}/new: already published" in out and out.endswith("cell in sync\n")


def test_every_call_is_retried_with_a_backoff_doubling_to_a_minute():
    errors: list[Exception] = [urllib.error.URLError("connection refused")] * 6 + [http_error(503, "not ready")]
    sax, clock = (
        FakeSax(published=(f"{CELL}/old",), failures={"/listall": errors, "/unpublish": [OSError("reset")]}),
        Clock(),
    )
    publisher(sax, clock).sync(CELL, [])
    assert not sax.models
    assert clock.sleeps == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0, 60.0, 5.0]
    assert sax.calls.count(("/listall", "")) == 8


def test_it_gives_up_at_the_deadline_with_the_last_error():
    sax, clock = FakeSax(failures={"/listall": [http_error(503, "cell not ready") for _ in range(100)]}), Clock()
    with pytest.raises(SystemExit, match=r"^listing the cell's models: gave up at the deadline; last error: 503 cell"):
        publisher(sax, clock, timeout=100).sync(CELL, [])
    assert clock.sleeps == [5.0, 10.0, 20.0, 40.0, 25.0]  # the last wait ends at the deadline


def test_a_model_that_never_loads_times_out():
    sax, clock = FakeSax(), Clock()
    sax.stuck.add(f"{CELL}/m")  # listcell stays at 0 loaded
    with pytest.raises(SystemExit, match=f"^timed out waiting for {CELL}/m to load$"):
        publisher(sax, clock, timeout=60).sync(CELL, [model("m")])
    assert clock.sleeps == [15.0] * 4


# ---- issue 36 #11: a published model that changed is changed, not skipped ------------------------------------------


def test_more_replicas_of_a_published_model_are_an_update_in_place_that_loads():
    """Before: the model was skipped as already published, so its new replicas never loaded and the Job (and
    `pulumi up`) failed at its deadline. Sax changes replicas in place (saxutil update)."""
    sax, clock = FakeSax(published=(f"{CELL}/m",)), Clock()
    publisher(sax, clock).sync(CELL, [model("m", replicas=2)])
    assert ("/update", f"{CELL}/m") in sax.calls and ("/unpublish", f"{CELL}/m") not in sax.calls
    assert sax.models[f"{CELL}/m"]["max_replicas"] == 2 and sax.models[f"{CELL}/m"]["active_replicas"] == 2


@pytest.mark.parametrize("change", [{"checkpoint": "gs://b/ckpt-2"}, {"model_path": "a.C"}])
def test_a_new_checkpoint_or_model_class_is_published_again(capsys, change):
    """Before: skipped as already published, so the cell kept serving the old weights or class. Sax refuses them
    in an update (validator.go ValidateModelUpdate), so the model is unpublished and published again."""
    sax, clock = FakeSax(published=(f"{CELL}/m",)), Clock()
    wanted = {**model("m"), **change}
    publisher(sax, clock).sync(CELL, [wanted])
    assert sax.calls.index(("/unpublish", f"{CELL}/m")) < sax.calls.index(("/publish", f"{CELL}/m"))
    assert ("/update", f"{CELL}/m") not in sax.calls
    state = sax.models[f"{CELL}/m"]
    assert (state["model_path"], state["checkpoint"]) == (wanted["model_path"], wanted["checkpoint"])
    assert "Sax changes neither in place" in capsys.readouterr().out


def test_the_job_runs_this_file():
    """The rendered Job carries the module's text as it is in the repository: what is linted and tested is what runs."""
    rec = recorded(ROOT / "examples" / "saxml-175b" / "Pulumi.saxml-175b.yaml", False)
    (job,) = [o for o in kubernetes_objects(rec) if o["kind"] == "Job"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python3", "-c", Path(publish_models.__file__).read_text()]
