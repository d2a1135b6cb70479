"""Test stand-in for mlir-air's programming_examples/llms/verify/runners package."""
