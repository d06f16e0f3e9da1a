"""Readers for Pallas/Mosaic TPU kernels embedded in `tpu_custom_call` backend configs."""
