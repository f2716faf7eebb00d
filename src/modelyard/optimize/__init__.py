"""Engine-layer tools: quantised and FP16 variants with an accuracy report."""
