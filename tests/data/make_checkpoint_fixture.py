"""Writes `torch_style.safetensors`, the fixture of tests/checkpoint.rs, with the Python
`safetensors` package (the library behind `safetensors.torch.save_file`; the numpy front end
writes the same bytes as the torch one for the same contiguous arrays).

    pip install safetensors numpy && python make_checkpoint_fixture.py
"""

import numpy as np
from safetensors.numpy import save_file

tensors = {
    # Row-major: weight[i, j] = (3 i + j) / 4.
    "encoder.weight": (np.arange(6, dtype=np.float32) / 4).reshape(2, 3),
    "encoder.bias": np.array([-1.0, 0.5], dtype=np.float32),
    "layers.0": np.array([[0.1, 0.2], [0.3, 0.4]], dtype=np.float64),
    "layers.1": np.array([1e-8, -3.5], dtype=np.float64),
}
save_file(tensors, "torch_style.safetensors", metadata={"format": "pt"})
