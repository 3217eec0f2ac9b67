"""GPU sharing rules: what each pool advertises, its device-plugin config, the GPU Operator values, node labels,
autoscaling, node counts and upgrades."""
