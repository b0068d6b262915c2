"""Checkpoints and the runners: loading and checking, the engine base, torch and ONNX Runtime, ONNX export."""
