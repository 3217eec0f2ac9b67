"""The plan between the stack file and the resources: `build_plan` derives every fact of a validated stack once, and
the components, the reports and the CLI read it (`stack_plan.StackPlan`)."""
