"""Preflight: can the stack's GPUs be had in its region, before `pulumi up` creates anything?

Checks, each a row (check, subject, verdict, detail, fix), from one `RegionOffers` read (three ARM calls) and the
deployed pools the guard already read (one call), so the checks of sizes, zones, quota and versions make four calls
whatever the pool count (subnets and role assignments one more each). One module per job:

- `report`: the rows, the report, the error failed rows raise, and the text table;
- `nodes`: the pools as preflight counts them (most nodes, upgrade surge, growth over what runs now);
- `offers`: `vm-size`, `zones`, `gpus`, `os-disk` (with Spot eviction) and `kubernetes-version`, against what
  the region offers;
- `quota`: per quota family, the regional total (`cores`) and the Spot bucket (`lowPriorityCores`); for several
  clusters sharing a subscription's region, summed and checked once (`shared_quota_checks`);
- `existing_cluster`: on an existing cluster (`existing: true`), from the cluster guard's one cluster read: its
  `baseline`, its Kubernetes version for the tenants' policies, a pool's VNet, a node for the GPU Operator's own
  pods, and the owners' GPU pools the operator would reach (`gpu-software`; the CLI adds a Kubernetes read,
  `gpushare.kubernetes.gpu_software`);
- `subnets`: each subnet of your own exists and has room for the addresses the pools can take;
- `role_assignments`: no assignment the program creates exists already under another name;
- `run`: `evaluate` (every row from what was read; `cluster` fails alone when an existing cluster is not there;
  `identity` fails an existing cluster that authenticates with a service principal when a pool names a subnet),
  `read_for_preflight`, and the runs of `gpushare preflight` (`check_live`) and of the program (`check_for_program`);
- `fleet_preflight`: a fleet's members, each member's checks with its quota rows moved to one set per subscription's
  region (`gpushare fleet preflight`).
"""
