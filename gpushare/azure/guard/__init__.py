"""The guard: stop a stack edit that would delete a live GPU pool, and say why and what to do instead.

AKS fixes some node-pool settings when it creates the pool. pulumi-azure-native plans a change to them as a
replace, and its replaces are delete-before-create: the pool and every pod on it go first. `protect=True` turns
that into a terse engine error; the guard compares the stack with the deployed pools first and explains. One
module per job:

- `create_only`: the settings AKS fixes at creation, and how the stack's and the deployed pool's compare;
- `cluster`: the same for the managed cluster (its own settings, and its system pool's from the pool table), run
  after the pools under `pulumi preview`/`up`;
- `in_place`: changes AKS makes in place that still disturb running pods (reported, never refused);
- `messages`: what the guard says for each violation and warning, with the ways forward (the adoption command
  included);
- `report`: the violations, the report, and the error that stops a run;
- `run`: `evaluate` (the stack against the deployed pools), and the reads: live from Azure (`check_live`), from a
  saved file (`check_file`), and as the Pulumi program runs it (`check_for_program`).

Pools are matched by name (the AKS agent pool name is `GpuPool.name`). A deployed pool with the
`gpushare.io/pool` label that the stack no longer lists would be deleted: a violation, unless it has no nodes left
(node count 0, never an unknown count). Even then Pulumi deletes it only if an earlier run applied `recreate: true`
on it, which lifted its protection; the guard says so in a warning. Pools without that label and not in the stack
(the system pool, pools made by hand, an existing cluster's own pools) are not gpushare's: ignored. On an existing
cluster (`existing: true`) a stack pool whose name is taken by such a pool is refused
(`messages.taken_by_unmanaged`): Pulumi would try to create a pool that exists there, or replace its owners' pool;
the message gives the choice: another name, or adopt it (`pulumi import` with the exact command, then the label).
On a cluster gpushare created, a same-named pool without the label is one deployed before gpushare labelled its
pools, and is compared as its own.
"""
