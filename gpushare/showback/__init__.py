"""Showback and cost: what each pool costs, the recording rules and dashboard that split it by tenant, and `usage`'s
report of what was held and used."""
