"""The model publication Job's program: make the Sax cell's published models exactly MODELS, then wait until each
has its replicas loaded.

It runs in the sax-http image as `python3 -c <this file's text>` (plan.py `publish_job`), so it imports the Python
standard library only, nothing of the project, and keeps to syntax an older Python 3 reads. It talks to the cell's
Sax HTTP server (/, /listall, /publish, /unpublish, /update, /listcell; GoogleCloudPlatform/ai-on-gke@e997f425:
tools/saxml-on-gke/httpserver/README.md "Saxml HTTP Server APIs"). Every call is retried with exponential backoff
until the Job's deadline, so a cell that is still starting does not fail the Job.

A model already published is compared with what is wanted (/listcell: model_path, checkpoint, max_replicas). Sax
updates a published model's replicas in place (google/saxml@v1.1.0:saxml/bin/saxutil_cmd_admin.go UpdateCmd sets
RequestedNumReplicas and calls admin.Update) but refuses a new model path or checkpoint (saxml/admin/validator.go
ValidateModelUpdate: "model path can't be changed", "checkpoint path can't be changed"), so those are unpublished
and published again: the model serves nothing until it is loaded again.

Environment: SAX_HTTP (the HTTP server's URL), SAX_CELL, MODELS (a JSON list of /publish bodies),
LOAD_TIMEOUT_SECONDS (default 3300), RETRY_SECONDS (the first backoff, default 5), POLL_SECONDS (default 15).
"""

from __future__ import annotations

import functools
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

MAX_BACKOFF = 60.0


class Already(Exception):
    """The server refused a publish because the model is already published."""


def http_call(base: str) -> Callable[[str, str, Any], Any]:
    """call(method, path, body): one JSON request to the Sax HTTP server at `base`; its JSON reply, or None."""

    def call(method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=120) as response:
            raw = response.read()
            return json.loads(raw) if raw else None

    return call


class Publisher:
    """Brings one cell's published models in line with a list, every call retried until `deadline` (a clock time)."""

    def __init__(
        self,
        call: Callable[[str, str, Any], Any],
        deadline: float,
        first_backoff: float = 5.0,
        poll: float = 15.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.call, self.deadline, self.first_backoff, self.poll = call, deadline, first_backoff, poll
        self.clock, self.sleep = clock, sleep

    def retry(self, what: str, fn: Callable[[], Any]) -> Any:
        """fn(), retried after any HTTP or network error with a backoff doubling to MAX_BACKOFF, until the deadline;
        an error that says "already" is raised as Already at once."""
        delay, last = self.first_backoff, None
        while self.clock() < self.deadline:
            try:
                return fn()
            except urllib.error.HTTPError as err:
                text = err.read().decode(errors="replace")
                if "already" in text.lower():
                    raise Already(text) from err
                last = f"{err.code} {text}"
            except (urllib.error.URLError, OSError, ValueError) as err:
                last = str(err)
            log(f"{what}: {last}; retrying in {delay}s")
            self.sleep(min(delay, max(0.0, self.deadline - self.clock())))
            delay = min(delay * 2, MAX_BACKOFF)
        raise SystemExit(f"{what}: gave up at the deadline; last error: {last}")

    def until(self, what: str, ready: Callable[[], Any]) -> None:
        """Poll `ready` (retried) every `poll` seconds until it is true; exit at the deadline."""
        while not self.retry(what, ready):
            self.sleep(self.poll)
            if self.clock() >= self.deadline:
                raise SystemExit(f"timed out waiting for {what}")

    def publish(self, model: dict[str, Any]) -> None:
        name = model["model"]
        try:
            log(f"publishing {name}: {self.retry('publish ' + name, lambda: self.call('POST', '/publish', model))}")
        except Already:
            log(f"{name}: already published")

    def unpublish(self, name: str) -> None:
        body = {"model": name}
        log(f"unpublishing {name}: {self.retry('unpublish ' + name, lambda: self.call('POST', '/unpublish', body))}")

    def update(self, model: dict[str, Any]) -> None:
        """Sax's in-place change of a published model: its replicas (the same body as /publish)."""
        name = model["model"]
        log(f"updating {name}: {self.retry('update ' + name, lambda: self.call('POST', '/update', model))}")

    def reconcile(self, model: dict[str, Any]) -> None:
        """A published model made what `model` says: replicas in place; a new model path or checkpoint by
        unpublishing and publishing it again (Sax changes neither in place)."""
        name = model["model"]
        state = self.retry("reading " + name, lambda: self.call("GET", "/listcell", {"model": name})) or {}
        had = (state.get("model_path"), state.get("checkpoint"))
        if had != (model["model_path"], model["checkpoint"]):
            log(
                f"{name}: model_path, checkpoint {had[0]}, {had[1]} -> {model['model_path']}, {model['checkpoint']}: "
                "Sax changes neither in place, so it is unpublished and published again (it serves nothing until "
                "it loads)"
            )
            self.unpublish(name)
            self.publish(model)
        elif int(state.get("max_replicas") or 0) != model["replicas"]:
            log(f"{name}: replicas {state.get('max_replicas')} -> {model['replicas']}, in place")
            self.update(model)
        else:
            log(f"{name}: already published as wanted")

    def loaded(self, model: dict[str, Any]) -> bool:
        state = self.call("GET", "/listcell", {"model": model["model"]}) or {}
        log(f"{model['model']}: {state.get('active_replicas', 0)}/{model['replicas']} replicas loaded")
        return int(state.get("active_replicas") or 0) >= model["replicas"]

    def sync(self, cell: str, desired: list[dict[str, Any]]) -> None:
        """Publish what `desired` adds, bring what the cell has in line with it, unpublish what the cell has beyond
        it, wait until every model is loaded."""
        self.until("the Sax HTTP server", lambda: self.call("GET", "/", None) is not None)
        listed = self.retry("listing the cell's models", lambda: self.call("GET", "/listall", {"sax_cell": cell}))
        current = set(listed or [])
        for model in desired:
            if model["model"] in current:
                self.reconcile(model)
            else:
                self.publish(model)
        for name in sorted(current - {m["model"] for m in desired}):
            self.unpublish(name)
        for model in desired:
            self.until(f"{model['model']} to load", functools.partial(self.loaded, model))
        log("cell in sync")


def log(message: str) -> None:
    print(message, flush=True)


def main(environ: Mapping[str, str]) -> None:
    publisher = Publisher(
        http_call(environ["SAX_HTTP"]),
        deadline=time.time() + int(environ.get("LOAD_TIMEOUT_SECONDS", "3300")),
        first_backoff=float(environ.get("RETRY_SECONDS", "5")),
        poll=float(environ.get("POLL_SECONDS", "15")),
    )
    publisher.sync(environ["SAX_CELL"], json.loads(environ["MODELS"]))


if __name__ == "__main__":
    main(os.environ)
