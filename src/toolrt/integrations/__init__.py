"""Integrations with other agent hosts, one public subpackage each."""
