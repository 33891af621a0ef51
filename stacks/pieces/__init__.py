"""The platform pieces (cluster, network, pools, bucket, add-ons, gateway, monitoring, ...). May import: stacks.addons, stacks.fleets and below.

Each piece in the workload types' shape: its config model (`stacks/model/config_model.py`), its own
rules (`problems`, every problem at once, each naming its key path), its plan (`plan`: every default resolved once,
the environment profile included) and the component that builds it from the plan (`components/<piece>.py`, called
as `(name, *, plan, deps)`).

Each piece has one entry point, `visit(ctx, found)` (`context.py`): `stacks/config.py` visits each piece once, in the
order of what it reads, and the visit runs its rules (its own, and those against the pieces visited before it) and
resolves its plan; nothing here imports another layer than `stacks`."""
