"""The tenants' admission policies: their CEL in this package's YAML files, and the builder that fills in a stack's
data (`policies`). `cel` reads the files; variables.yaml, validations.yaml, match_conditions.yaml and fragments.yaml
hold every rule once; tests/golden/admission/ holds the assembled policies of a test stack."""
