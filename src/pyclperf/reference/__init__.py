"""Reference figures: CUDA's own kernels, other tools' figures on record."""
