"""Pulumi ComponentResources that wire gpushare's domain logic to Azure and Kubernetes resources."""
