"""XLA error messages shared by the explain tests (as users reported them)."""

SEED = (
    "XlaRuntimeError: INVALID_ARGUMENT: Executable(jit_embedding_pipeline_step_fn) expected parameter 2482 of "
    "size 5242880 (bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}) but got buffer with incompatible size 1638400 "
    "(bf16[16,1280,40]{1,2,0:T(8,128)(2,1)})"
)
UNTILED_PRINT = (
    "expected parameter 0 of size 6144 (f32[5,4,3]{0,1,2:T(4,128)}) but got buffer with incompatible size "
    "10240 (f32[5,4,3]{2,1,0})"
)
