"""Run the real program offline, under Pulumi's mocks, and record everything it registers.

Used by the tests and by `python -m tooling.review.render`. Pulumi's own mock API hides resource options, so the
monitor is subclassed to keep, per registration: type, name, inputs, parent, provider, dependencies,
protect, retain_on_delete, deleted_with, ignore_changes, delete_before_replace, custom_timeouts.

Two modes:
- `preview=False`: a first `pulumi up`: every resource gets fake computed outputs (ids, emails, endpoints).
- `preview=True`: a first `pulumi preview`: mocks return only the inputs, so computed values stay unknown,
  as they are before anything exists. Code that needs a computed value at preview time fails here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import runpy
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "tpu-serving"
UNKNOWN = "(known after apply)"
# the project number gcp.organizations.getProject answers under the mocks
PROJECT_NUMBER = "123456789012"
STACK_REFERENCE = "pulumi:pulumi:StackReference"
# A fleet stack's folder holds the recorded outputs of the regional stacks it references (tooling/review/fleet_render.py).
RECORDED_OUTPUTS = "outputs"
FLEET_KEY = f"{PROJECT}:fleet"  # set: the stack is a fleet stack (__main__.py)


@dataclass
class Registration:
    type: str
    name: str
    urn: str
    custom: bool
    inputs: dict[str, Any]
    parent: str = ""
    provider: str = ""
    dependencies: list[str] = field(default_factory=list)
    # input key -> the URNs whose outputs that input reads (what the engine's dependent replacements follow)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    protect: bool = False
    retain_on_delete: bool = False
    deleted_with: str = ""
    ignore_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool = False
    additional_secret_outputs: list[str] = field(default_factory=list)
    remote: bool = False  # a multi-language component (e.g. kubernetes:yaml/v2:ConfigFile)
    replace_on_changes: list[str] = field(default_factory=list)
    alias_types: list[str] = field(default_factory=list)
    """The type of each alias spec it carries (`aliases=[pulumi.Alias(type_=...)]`): the types its URN had before."""
    aliases: list[dict[str, str]] = field(default_factory=list)
    """Each alias spec it carries, as sent: its `name`, `type` and `parentUrn` where set (a renamed or moved resource:
    `pulumi.Alias(name=..., parent=...)`)."""
    custom_timeouts: dict[str, str] = field(default_factory=dict)  # create/update/delete as given ("60m")


@dataclass
class Recording:
    resources: list[Registration] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    duplicate_urns: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    """The token of every invoke (data source) the program made, in order."""

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> Registration:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            raise AssertionError(f"expected one {type_} {name or ''}, found {[r.name for r in found]}")
        return found[0]

    def by_urn(self, urn: str) -> Registration:
        return next(r for r in self.resources if r.urn == urn)


# ---- fake computed outputs ----------------------------------------------------------------------------


def _fake_outputs(type_: str, name: str, inputs: dict[str, Any], project: str) -> dict[str, Any]:
    """Plausible values for what the cloud computes, so first-`up` code paths run."""
    out: dict[str, Any] = {}
    rname = inputs.get("name", name)
    if type_ == "gcp:container/cluster:Cluster":
        out = {
            "endpoint": "203.0.113.10",
            "masterAuth": {**inputs.get("masterAuth", {}), "clusterCaCertificate": "LS0tLS1CRUdJTi1GQUtFLUNBLS0tLS0="},
            "selfLink": f"https://container.googleapis.com/v1/projects/{project}/locations/x/clusters/{rname}",
        }
        endpoints = inputs.get("controlPlaneEndpointsConfig")
        if endpoints and "dnsEndpointConfig" in endpoints:
            dns = {**endpoints["dnsEndpointConfig"], "endpoint": f"gke-0123456789abcdef-{rname}.x.gke.goog"}
            out["controlPlaneEndpointsConfig"] = {**endpoints, "dnsEndpointConfig": dns}
    elif type_ == "gcp:serviceaccount/account:Account":
        out = {
            "email": f"{inputs.get('accountId')}@{project}.iam.gserviceaccount.com",
            "name": f"projects/{project}/serviceAccounts/{inputs.get('accountId')}@{project}.iam.gserviceaccount.com",
            "uniqueId": "100000000000000000000",
        }
    elif type_ == "gcp:storage/bucket:Bucket":
        out = {"url": f"gs://{rname}", "selfLink": f"https://www.googleapis.com/storage/v1/b/{rname}"}
    elif type_ in ("gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork"):
        kind = "networks" if type_.endswith("Network") else "subnetworks"
        out = {"selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/global/{kind}/{rname}"}
    elif type_ == "gcp:organizations/project:Project" or type_ == "gcp:organizations/getProject:getProject":
        out = {"number": "123456789012"}
    return out


def _unknown_computed(type_: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Computed fields nested in an input block are unknown in a real first preview (the provider plans them as
    computed); an echoed input would otherwise make them look known and empty."""
    from pulumi.runtime.rpc import UNKNOWN

    endpoints = inputs.get("controlPlaneEndpointsConfig")
    if type_ == "gcp:container/cluster:Cluster" and endpoints and "dnsEndpointConfig" in endpoints:
        dns = {**endpoints["dnsEndpointConfig"], "endpoint": UNKNOWN}
        return {"controlPlaneEndpointsConfig": {**endpoints, "dnsEndpointConfig": dns}}
    return {}


def _stack_reference(args: Any, stack_outputs: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A StackReference (Pulumi mocks read it as a resource of this type): the referenced stack's recorded outputs,
    found by its last name segment (<organization>/<project>/<stack> -> <stack>); a missing recording fails the run
    naming it."""
    name = str(args.inputs.get("name") or args.resource_id)
    key = name.rsplit("/", 1)[-1]
    if key not in stack_outputs:
        raise RuntimeError(
            f"StackReference {name!r}: no recorded outputs {RECORDED_OUTPUTS}/{key}.json beside the stack file "
            "(.venv/bin/python -m tooling.review.fleet_render <folder> records them from the regional stack files)"
        )
    outputs = stack_outputs[key]
    return name, {"name": name, "outputs": outputs, "secretOutputNames": [k for k in ("kubeconfig",) if k in outputs]}


def _mocks(
    preview: bool, project: str, stack_outputs: dict[str, dict[str, Any]] | None = None, calls: list[str] | None = None
):
    import pulumi

    class RecordingMocks(pulumi.runtime.Mocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs):
            inputs = dict(args.inputs)
            if args.typ == STACK_REFERENCE:
                return _stack_reference(args, stack_outputs or {})
            if preview:
                return (None, {**inputs, **_unknown_computed(args.typ, inputs)})
            state = {**inputs, **_fake_outputs(args.typ, args.name, inputs, project)}
            return (f"{args.name}-id", state)

        def call(self, args: pulumi.runtime.MockCallArgs):
            if calls is not None:
                calls.append(args.token)
            if args.token == "gcp:organizations/getProject:getProject":
                return ({"number": PROJECT_NUMBER, "projectId": args.args.get("projectId", project)}, [])
            if args.token == "gcp:storage/getProjectServiceAccount:getProjectServiceAccount":
                email = f"service-{PROJECT_NUMBER}@gs-project-accounts.iam.gserviceaccount.com"
                return ({"emailAddress": email, "member": f"serviceAccount:{email}", "project": project}, [])
            return ({}, [])

    return RecordingMocks()


def _monitor(mocks, recording: Recording):
    import pulumi
    from pulumi.runtime import rpc
    from pulumi.runtime.mocks import MockMonitor

    lock = threading.Lock()  # the runtime registers resources from several executor threads

    class RecordingMonitor(MockMonitor):
        def RegisterResource(self, request):
            response = super().RegisterResource(request)
            if request.type == "pulumi:pulumi:Stack":
                return response
            urn = response.urn
            inputs = pulumi.runtime.sync_await._sync_await(_deserialize(rpc, request.object))
            registration = Registration(
                type=request.type,
                name=request.name,
                urn=urn,
                custom=bool(request.custom),
                inputs=inputs,
                parent=request.parent,
                provider=request.provider,
                dependencies=list(request.dependencies),
                property_dependencies={k: list(v.urns) for k, v in request.propertyDependencies.items()},
                protect=bool(request.protect),
                retain_on_delete=bool(request.retainOnDelete),
                deleted_with=request.deletedWith,
                ignore_changes=list(request.ignoreChanges),
                delete_before_replace=bool(request.deleteBeforeReplace),
                additional_secret_outputs=list(request.additionalSecretOutputs),
                remote=bool(request.remote),
                replace_on_changes=list(request.replaceOnChanges),
                alias_types=[a.spec.type for a in request.aliases if a.HasField("spec") and a.spec.type],
                aliases=[
                    {k: getattr(a.spec, k) for k in ("name", "type", "parentUrn") if getattr(a.spec, k)}
                    for a in request.aliases
                    if a.HasField("spec")
                ],
                custom_timeouts={
                    k: getattr(request.customTimeouts, k)
                    for k in ("create", "update", "delete")
                    if request.HasField("customTimeouts") and getattr(request.customTimeouts, k)
                },
            )
            with lock:
                if any(r.urn == urn for r in recording.resources):
                    recording.duplicate_urns.append(urn)
                recording.resources.append(registration)
            return response

    return RecordingMonitor(mocks)


async def _deserialize(rpc, struct):
    return rpc.deserialize_properties(struct, keep_unknowns=True)


@contextlib.contextmanager
def _no_source_positions() -> Iterator[None]:
    """Skip the SDK's per-resource stack walk: it only feeds RegisterResourceRequest.stackTrace/sourcePosition,
    which the mock monitor never reads, and under a test runner's deep stack it is a quarter of a run's CPU.
    (pulumi==3.272.0 sdk/python/lib/pulumi/runtime/resource.py: register_resource and read_resource call the
    module-level `_get_stack_trace()`; runtime/mocks.py's MockMonitor.RegisterResource ignores both fields.)"""
    from pulumi.runtime import resource
    from pulumi.runtime.proto import source_pb2

    walk = resource._get_stack_trace
    resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        resource._get_stack_trace = walk


class _WarningCollector(logging.Handler):
    def __init__(self, recording: Recording):
        super().__init__(level=logging.WARNING)
        self.recording = recording

    def emit(self, record: logging.LogRecord) -> None:
        self.recording.warnings.append(record.getMessage())


class StackFileError(ValueError):
    """A stack file the Pulumi CLI would not read: the message names the file, line and column, and a hint."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys in a mapping; the Pulumi CLI refuses the file. It reads stack files
    with gopkg.in/yaml.v3 (pulumi/pulumi@v3.259.0 sdk/go/common/encoding/marshal.go, used by
    sdk/go/common/workspace/loaders.go LoadProjectStackBytes), whose decoder has uniqueKeys on by default and fails
    with "line N: mapping key "k" already defined at line M" for equal scalar keys at any depth
    (go-yaml/yaml@v3.0.1 decode.go newDecoder, decoder.mapping). So this loader refuses them too."""

    # A plain scalar that looks like a timestamp (`start: 2025-01-04T03:00:00Z`, as the README writes maintenance
    # times) stays a string: yaml.v3 decodes a timestamp into an interface{} as the string it was, "for backward
    # compatibility" (go-yaml/yaml@v3.0.1 decode.go, decoder.scalar), so the program gets the text; PyYAML's
    # SafeLoader would make it a datetime, which no JSON config value can be.
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[str, yaml.Node] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.value == "<<":
                continue
            if key.value in first:
                raise StackFileError(
                    f"{_where(key.start_mark)}: the key {key.value!r} is already defined at line "
                    f"{first[key.value].start_mark.line + 1}; the Pulumi CLI refuses a file with a duplicate key "
                    f"(yaml.v3: mapping key already defined), so keep one of them"
                )
            first[key.value] = key
        return super().construct_mapping(node, deep=deep)


def _where(mark: Any) -> str:
    return f"{mark.name}:{mark.line + 1}:{mark.column + 1}"


# What a YAML error usually means in a stack file, by the parser's words.
_YAML_HINTS = (
    ("'\\t'", "indent with spaces: YAML does not allow tabs"),
    ("mapping values are not allowed", "a value containing ': ' needs quotes, or this line is indented too far"),
    ("could not find expected ':'", "a key needs ': ' after it; or a quote opened earlier is not closed"),
    ("expected <block end>", "this line is indented differently from the keys before it: align it with its siblings"),
    ("found character '@'", "a value starting with '@' or '`' needs quotes"),
    ("found undefined alias", "'*' starts an alias in YAML: quote a value that begins with '*'"),
    ("while scanning a quoted scalar", "a quote is opened and not closed"),
    ("while parsing a flow sequence", "a '[' is opened and not closed with ']'"),
    ("while parsing a flow mapping", "a '{' is opened and not closed with '}'"),
)
_YAML_DEFAULT_HINT = "check the indentation and quoting on this line"


def _yaml_error(path: Path, text: str, err: yaml.MarkedYAMLError) -> StackFileError:
    """file:line:column, the parser's problem, the line with a caret under the column, and a hint; when the
    construct at fault was opened elsewhere (an unclosed bracket or quote: PyYAML's context_mark), that line too,
    since the mistake is usually there."""
    mark = err.problem_mark or err.context_mark
    said = " ".join(str(p) for p in (err.context, err.problem) if p)
    if mark is None:
        return StackFileError(f"{path}: not valid YAML: {said}")
    lines = text.splitlines()
    hint = next((h for needle, h in _YAML_HINTS if needle in said), _YAML_DEFAULT_HINT)
    opened = err.context_mark
    if opened is not None and (opened.line, opened.column) != (mark.line, mark.column):
        said += f" (opened at line {opened.line + 1}, column {opened.column + 1})"
        where = f"line {opened.line + 1}, where it opens"
        hint = f"check {where}, then this line" if hint == _YAML_DEFAULT_HINT else f"{hint}: see {where}"
        return StackFileError(
            f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {said}\n"
            f"{_caret(lines, opened, 'opened here')}{_caret(lines, mark, 'found here')}  hint: {hint}"
        )
    return StackFileError(
        f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {said}\n{_caret(lines, mark)}  hint: {hint}"
    )


def _caret(lines: list[str], mark: Any, label: str = "") -> str:
    """The marked line, and a caret under its column (with a label when two lines are shown)."""
    line = lines[mark.line] if mark.line < len(lines) else ""
    tag = f"line {mark.line + 1}: " if label else ""
    return f"    {tag}{line}\n    {' ' * (len(tag) + mark.column)}^{' ' + label if label else ''}\n"


def read_stack_yaml(path: Path) -> Any:
    """A stack file's YAML as the Pulumi CLI reads it: a syntax error or a duplicate key is a StackFileError naming
    the file, line and column."""
    text = path.read_text()
    loader = _UniqueKeyLoader(text)
    loader.name = str(path)  # marks (line, column) name the file
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as err:
        raise _yaml_error(path, text, err) from None
    finally:
        loader.dispose()


def load_stack_file(path: Path) -> dict[str, Any]:
    """The `config:` map of a Pulumi.<stack>.yaml as written (read as the Pulumi CLI reads it: read_stack_yaml): an
    encrypted value stays `{secure: <ciphertext>}` (config_values turns it into a placeholder secret)."""
    data = read_stack_yaml(path) or {}
    return dict(data.get("config") or {})


# What an encrypted config value (`{secure: <ciphertext>}`, as `pulumi config set --secret` writes it) reads as
# offline: nothing here can or needs to decrypt it; the program gets it as a secret, as from the Pulumi CLI.
SECRET_PLACEHOLDER = "offline-placeholder-secret"


def is_secure(value: Any) -> bool:
    """An encrypted config value: a one-key map `{secure: <ciphertext>}`."""
    return isinstance(value, dict) and set(value) == {"secure"}


def _decrypted(value: Any) -> tuple[Any, bool]:
    """(value with every `{secure: ...}` inside it as the placeholder, whether it held one)."""
    if is_secure(value):
        return SECRET_PLACEHOLDER, True
    if isinstance(value, dict):
        fields = {k: _decrypted(v) for k, v in value.items()}
        return {k: v for k, (v, _) in fields.items()}, any(s for _, s in fields.values())
    if isinstance(value, list):
        items = [_decrypted(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


def config_values(config: dict[str, Any]) -> tuple[dict[str, str], tuple[str, ...]]:
    """(config as the Pulumi CLI hands it to the program: strings, structured values as JSON; the secret keys).

    A key whose value is or holds an encrypted `{secure: ...}` value is a secret key, as the CLI makes it (it lists
    such keys in PULUMI_CONFIG_SECRET_KEYS, an object holding a secure value included), with SECRET_PLACEHOLDER for
    each ciphertext: an offline run never needs a secret's value."""
    out, secret = {}, []
    for key, value in config.items():
        if isinstance(value, dict) and "value" in value and len(value) == 1:
            value = value["value"]
        value, is_secret = _decrypted(value)
        if is_secret:
            secret.append(key)
        out[key] = value if isinstance(value, str) else json.dumps(value)
    return out, tuple(secret)


def run_program(
    config: dict[str, Any],
    *,
    stack: str = "dev",
    preview: bool = False,
    program: Path | None = None,
    recording: Recording | None = None,
    secret_keys: tuple[str, ...] = (),
    stack_outputs: dict[str, dict[str, Any]] | None = None,
) -> Recording:
    """Evaluate the program (default: the real `__main__.py`) with `config` and return what it registered.

    `secret_keys` are config keys passed as secrets (as `pulumi config set --secret` makes them); keys whose value
    is encrypted in the stack file (`{secure: ...}`) are secrets too, with a placeholder value.
    Errors the program raises (e.g. `pulumi.RunError` from config validation) propagate; pass `recording` to
    see what was registered before the error. `stack_outputs`: the outputs each StackReference reads, by stack name.
    """
    import pulumi
    from pulumi.runtime import settings as runtime_settings
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    recording = recording if recording is not None else Recording()
    values, encrypted = config_values(config)
    project = str(values.get("gcp:project", "offline-project"))

    runtime_settings.set_root_resource(None)  # type: ignore[arg-type]  # a fresh stack per run
    pulumi.runtime.set_all_config(values, sorted({*secret_keys, *encrypted}))
    logger = logging.getLogger(f"tpu-serving.offline.{id(recording)}")
    logger.propagate = False
    logger.addHandler(_WarningCollector(recording))
    mocks = _mocks(preview, project, stack_outputs, recording.calls)
    pulumi.runtime.set_mocks(
        mocks, project=PROJECT, stack=stack, preview=preview, logger=logger, monitor=_monitor(mocks, recording)
    )

    path = program or ROOT / "__main__.py"
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:

        def program_main() -> None:
            runpy.run_path(str(path), run_name="__main__")

        with _no_source_positions():
            try:
                _sync_await(run_pulumi_func(program_main))
            except BaseException:
                _cancel_leftover_tasks()
                raise
        _collect_outputs(recording)
    finally:
        os.chdir(cwd)
        runtime_settings.set_root_resource(None)  # type: ignore[arg-type]
    return recording


def _cancel_leftover_tasks() -> None:
    """After a program failed, the outputs it left tracked (the SDK's SETTINGS.outputs, which set_mocks does not
    reset: pulumi sdk/python/lib/pulumi/runtime/mocks.py MockSettings sets only rpc_manager) would be awaited by the
    next run's run_pulumi_func and fail it with this run's error; its tasks still waiting would run in the next run's
    event loop. Both dropped here, as a process that ends would drop them."""
    import asyncio

    from pulumi.runtime import settings
    from pulumi.runtime.sync_await import _ensure_event_loop

    settings.SETTINGS.outputs.clear()
    loop = _ensure_event_loop()
    if loop.is_running():
        return
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _resolve(value: Any) -> tuple[Any, bool]:
    """(value with unknown parts as UNKNOWN, is secret), resolving dicts and lists element by element."""
    import pulumi
    from pulumi.runtime.sync_await import _sync_await

    if isinstance(value, dict):
        fields = {k: _resolve(v) for k, v in value.items()}
        return {k: v for k, (v, _) in fields.items()}, any(s for _, s in fields.values())
    if isinstance(value, list | tuple):
        items = [_resolve(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    out = pulumi.Output.from_input(value)
    secret = _sync_await(out.is_secret())
    if not _sync_await(out.is_known()):
        return UNKNOWN, secret
    resolved = _sync_await(out.future(with_unknowns=True))
    if isinstance(resolved, dict | list):
        inner, inner_secret = _resolve(resolved)
        return inner, secret or inner_secret
    return resolved, secret


def _collect_outputs(recording: Recording) -> None:
    from pulumi.runtime import settings as runtime_settings

    root = runtime_settings.get_root_resource()
    for key, value in (getattr(root, "outputs", None) or {}).items():
        resolved, secret = _resolve(value)
        recording.outputs[key] = resolved
        if secret:
            recording.secret_outputs.add(key)


def run_stack_file(path: Path, *, preview: bool = False, stack: str | None = None) -> Recording:
    """Run the program with the config of a stack file (`Pulumi.<stack>.yaml` or an example)."""
    name = stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    return run_program(load_stack_file(path), stack=name, preview=preview, stack_outputs=recorded_outputs(path))


def recorded_outputs(stack_file: Path) -> dict[str, dict[str, Any]]:
    """The recorded outputs of the stacks a (fleet) stack file references: <its folder>/outputs/<stack>.json."""
    folder = stack_file.parent / RECORDED_OUTPUTS
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def parse_config(config: dict[str, Any], stack: str, *, secret_keys: tuple[str, ...] = ()):
    """What the program's `load_stack_config()` does with `config` (a stack file's `config:` map), without the
    Pulumi runtime: the validated StackConfig, or ConfigError. Keys read as the program reads them (structured
    values through their JSON text), unknown `tpu-serving:` keys reported, and how hfToken is set (a secret: given
    encrypted or in `secret_keys`; else plain text, which is refused)."""
    from stacks.config import NS, known_keys, parse_stack_config
    from stacks.pulumi_config import raw_config
    from workloads.registry import WORKLOAD_TYPES

    values, encrypted = config_values(config)
    secrets = {*secret_keys, *encrypted}
    raw = raw_config(lambda key: values.get(f"{NS}:{key}"))
    keys = [k.split(":", 1)[1] for k in values if k.startswith(f"{NS}:")]
    token = f"{NS}:hfToken"
    return parse_stack_config(
        raw,
        stack=stack,
        pulumi_project=PROJECT,
        gcp_project=values.get("gcp:project"),
        region=values.get("gcp:region"),
        workload_types=WORKLOAD_TYPES,
        extra_keys=tuple(sorted(k for k in keys if k not in known_keys())),
        hf_token=None if token not in values else "secret" if token in secrets else "plain",
    )


def parse_any_config(config: dict[str, Any], stack: str, *, secret_keys: tuple[str, ...] = ()):
    """What the program checks of a stack's config before registering anything (__main__.py): a fleet stack's
    (`tpu-serving:fleet` set: components/fleet.py load_fleet_config, the FleetConfig) or a regional stack's
    (parse_config, the StackConfig); ConfigError with every problem."""
    if FLEET_KEY not in config:
        return parse_config(config, stack, secret_keys=secret_keys)
    from components.fleet import fleet_config
    from stacks.problems import ConfigError

    values, _ = config_values(config)
    others = tuple(sorted(k.split(":", 1)[1] for k in values if k.startswith(f"{PROJECT}:") and k != FLEET_KEY))
    cfg, problems = fleet_config(program_value(values[FLEET_KEY]), values.get("gcp:project"), others)
    if cfg is None:
        raise ConfigError(stack, problems)
    return cfg


def program_value(text: str) -> Any:
    """A config value as the program reads it from the string the CLI hands it (stacks/pulumi_config.py raw_config):
    JSON text as its value, any other text as the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_stack_file(path: Path, stack: str | None = None):
    """The validated StackConfig of a stack file, without running the program (for render and tests)."""
    return parse_config(load_stack_file(path), stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml"))


def example_names() -> list[Path]:
    """Every example stack file (examples/<example>/Pulumi.<stack>.yaml)."""
    return sorted((ROOT / "examples").glob("*/Pulumi.*.yaml"))
