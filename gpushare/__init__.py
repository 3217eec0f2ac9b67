"""gpushare: GPU sharing (MIG, time-slicing, MPS) on AKS, provisioned with Pulumi.

Grouped by stage, bottom up; a module imports only from its own stage or the ones below it
(`tests/test_layering.py`):
1. `model`: the validated stack model, the GPU catalog, regions, the stack file's key names;
2. `sharing`: what each pool advertises, device-plugin configs, operator values, node labels;
3. `stackfile`: reading and validating a stack file into the model;
4. `azure`: reads, preflight, the guard;
5. `kubernetes`: tenants, queues, kubeconfig, verify;
6. `showback`: cost, the showback rules and dashboard, `usage`'s report;
7. `plan`: `build_plan`, the one place a stack's facts are derived, into the `StackPlan` everything above reads;
8. `review` (plan, PR and compare reports) and `components` (the Pulumi ComponentResources);
9. `render`: the program under the mock engine;
10. `cli`.
Only `components` and `render` import Pulumi.
"""
