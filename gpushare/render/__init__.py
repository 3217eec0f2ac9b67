"""Runs the Pulumi program offline under the SDK's mock engine (no CLI, no cloud) and records what it registers."""
