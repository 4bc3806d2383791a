"""The machinery under ``tw.keras``: the layer base class, symbolic tensors and the
graph of layer calls (the functional API), models and their training loop."""
