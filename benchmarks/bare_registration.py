"""The benchmark's yardstick: what registering a plan's resources costs with none of gpushare's program around them.

`record STACK_FILE OUT` runs the plan's program once under the mock engine, as `plan` does, and writes every
registration it recorded (type, name, inputs, parent, options; the components too). `register OUT` then, in a fresh
process, imports nothing of gpushare's program or the providers' SDKs and registers the very same resources under the
same mock engine (`run_pulumi`): each component as a plain `pulumi.ComponentResource`, each custom resource as a generic
`pulumi.CustomResource(type, name, inputs, opts)` (providers as `pulumi.ProviderResource`), with the same parents (so
the same URNs), providers, depends_on, protect, ignore/replace options, secret inputs and the aliases gpushare gives
(not the type-only aliases a typed SDK class adds for each earlier API version: a generic resource has none). Its
process ends as the `gpushare` command's does (`gpushare.cli.run_as_command`: collector off, no teardown). What `plan`
spends beyond this is gpushare's own work: validation, the domain logic, the typed SDK classes and the Output plumbing.

`register OUT --typed` declares the same resources through their typed SDK classes instead (pulumi_azure_native's,
pulumi_kubernetes's: `AgentPool(name, agent_pool_name=..., opts=...)`), each recorded input as the class's keyword
argument, with the same options: the floor for any program that declares these resources through the providers'
Python SDKs, as gpushare must. It pays what those classes cost: their imports (the SDKs build every input class's
type hints when their modules load) and their work per resource (every property of the class, set or not, becomes
an Output of the registration). What `plan` spends beyond this run is gpushare's own code.

Either replay exits non-zero unless it registered exactly the recorded resources with exactly the recorded inputs.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpushare.cli import run_as_command

PROVIDER_PREFIX = "pulumi:providers:"


def record(stack_path: Path, out: Path) -> None:
    from gpushare.render.mock_engine import run_program
    from gpushare.stackfile.config import encode_engine_config, parse_stack_file, read_stack_file

    stack_file = read_stack_file(stack_path)
    stack = parse_stack_file(stack_file)
    recording = run_program(stack.stack, encode_engine_config(stack_file.config), stack_file=stack_file.path)
    out.write_text(json.dumps({"stack": stack.stack,
                               "resources": [dataclasses.asdict(r) for r in recording.resources]}))


def sdk_class(type_token: str) -> type:
    """The typed SDK class of a recorded type: `azure-native:containerservice:AgentPool` is
    `pulumi_azure_native.containerservice.AgentPool`, `kubernetes:rbac.authorization.k8s.io/v1:RoleBinding` is
    `pulumi_kubernetes.rbac.v1.RoleBinding`, `pulumi:providers:kubernetes` is `pulumi_kubernetes.Provider`."""
    if type_token.startswith(PROVIDER_PREFIX):
        package = type_token[len(PROVIDER_PREFIX):].replace("-", "_")
        return importlib.import_module(f"pulumi_{package}").Provider
    package, module, name = type_token.split(":")
    if package == "kubernetes":
        group, version = module.split("/")
        module = f"{group.split('.')[0]}.{version}"
    return getattr(importlib.import_module(f"pulumi_{package.replace('-', '_')}.{module}"), name)


def typed_constructor(type_token: str) -> Callable[[str, dict[str, Any], Any], Any]:
    """Declares a recorded resource through its typed SDK class: each recorded wire name becomes the class's keyword
    argument (`resourceName` is AgentPool's `resource_name_`), nested values stay as recorded."""
    import pulumi._types

    cls = sdk_class(type_token)
    module = sys.modules[cls.__module__]
    # The resource's own Args class is the one input type its module defines (AgentPoolArgs, ConfigMapInitArgs).
    args_class = next(v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__
                      and pulumi._types.is_input_type(v))
    wire_names = pulumi._types.input_type_py_to_pulumi_names(args_class)
    keyword_for = {wire_names[p.rstrip("_") if p not in wire_names else p]: p
                   for p in list(inspect.signature(cls._internal_init).parameters)[3:] if p != "__props__"}

    provider = type_token.startswith(PROVIDER_PREFIX)

    def construct(name: str, props: dict[str, Any], opts: Any) -> Any:
        unknown = sorted(set(props) - set(keyword_for))
        if unknown:
            raise SystemExit(f"{type_token} {name}: {cls.__name__} takes no input named {', '.join(unknown)}")
        return cls(name, opts=opts, **{keyword_for[key]: _provider_value(value) if provider else value
                                       for key, value in props.items()})
    return construct


def _provider_value(value: Any) -> Any:
    """A provider's bool or number input as its typed class takes it: the SDK sends provider inputs that are not
    strings JSON-encoded (`enableConfigMapMutable: "true"`), which the recording keeps; given back as the string,
    the class would encode it again (`"\"true\""`)."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if isinstance(decoded, (bool, int, float)):
            return decoded
    return value


def register(recorded: Path, typed: bool = False) -> int:
    import pulumi

    from gpushare.render.mock_engine import run_pulumi

    try:
        document = json.loads(recorded.read_text())
        resources: list[dict[str, Any]] = document["resources"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{recorded}: not a recording ({exc}); write one with `bare_registration.py record "
                         f"STACK_FILE {recorded}`") from None
    constructors = {r["type"]: typed_constructor(r["type"]) for r in resources if r["custom"]} if typed else {}

    def program() -> None:
        by_name: dict[str, pulumi.Resource] = {}
        for r in resources:
            parent = by_name.get(r["parent"]) if r["parent"] else None
            if not r["custom"]:
                by_name[r["name"]] = pulumi.ComponentResource(r["type"], r["name"], None,
                                                              pulumi.ResourceOptions(parent=parent))
                continue
            props: dict[str, Any] = {key: pulumi.Output.secret(value) if key in r["secret_inputs"] else value
                                     for key, value in r["inputs"].items()}
            opts = pulumi.ResourceOptions(
                parent=parent,
                provider=by_name[r["provider"]] if r["provider"] else None,
                protect=r["protect"],
                depends_on=[by_name[d] for d in r["depends_on"] if d in by_name] or None,
                ignore_changes=r["ignore_changes"] or None,
                replace_on_changes=r["replace_on_changes"] or None,
                delete_before_replace=r["delete_before_replace"],
                retain_on_delete=r["retain_on_delete"],
                aliases=[a["urn"] if "urn" in a else pulumi.Alias(name=a["name"], parent=a["parentUrn"])
                         for a in r["aliases"] if a.get("urn") or a.get("name")] or None,
            )
            resource: pulumi.Resource
            if typed:
                resource = constructors[r["type"]](r["name"], props, opts)
            elif r["type"].startswith(PROVIDER_PREFIX):
                resource = pulumi.ProviderResource(
                    r["type"][len(PROVIDER_PREFIX):], r["name"], props, opts)
            else:
                resource = pulumi.CustomResource(r["type"], r["name"], props, opts)
            by_name[r["name"]] = resource

    recording = run_pulumi(program, stack=document["stack"], preview=True)

    def identity(r: dict[str, Any]) -> tuple:
        return (r["type"], r["name"], r["parent"], r["provider"], r["protect"], tuple(r["depends_on"]))

    replayed = sorted(identity(dataclasses.asdict(r)) + (json.dumps(r.inputs, sort_keys=True),)
                      for r in recording.resources)
    if replayed != sorted(identity(r) + (json.dumps(r["inputs"], sort_keys=True),) for r in resources):
        raise SystemExit(f"the replay registered other resources or inputs than the plan recorded "
                         f"({len(replayed)} of {len(resources)})")
    return len(recording.resources)


def main(argv: list[str]) -> int:
    if argv[:1] == ["record"] and len(argv) == 3:
        record(Path(argv[1]), Path(argv[2]))
    elif argv[:1] == ["register"] and len(argv) in (2, 3) and argv[2:] in ([], ["--typed"]):
        register(Path(argv[1]), typed=argv[2:] == ["--typed"])
    else:
        raise SystemExit("usage: bare_registration.py record STACK_FILE OUT | register OUT [--typed]")
    return 0


if __name__ == "__main__":
    # A process like the `gpushare` command's (collector off, no teardown): the yardstick differs from `plan` only
    # in what runs inside it.
    run_as_command(lambda: main(sys.argv[1:]))
