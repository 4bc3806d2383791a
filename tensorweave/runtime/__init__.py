"""The runtime: resources (variables, queues), kernel context and, later, the executor."""

from .resources import ResourceManager, VariableState, default_resource_manager

__all__ = ["ResourceManager", "VariableState", "default_resource_manager"]
