"""System-prompt assembly (private): ordered sections, the model-facing tool list, template variables."""
