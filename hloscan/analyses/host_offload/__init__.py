"""E1200 CompileTimeHostOffloadOutputLocationMismatch: a tensor moved to host memory reaches an entry output
whose layout is not host memory.

XLA's HostOffloader walks forward from every move to host (a `MoveToHost` custom call, jax's
`annotate_device_placement` with `_xla_buffer_placement="pinned_host"`, an S(5) entry parameter, a host output
of a kernel) through tuples, get-tuple-elements, bitcasts, copies, calls, loops and conditionals, and stops at a
move back to device. A walk that ends at an entry output whose layout is not S(5) fails the compile:

    E1200: Tensor which is moved to host (starting from X) is returned from the entry computation but the
    layout for this output is not set to host memory.

walk.py replays that walk on the dump (and the name XLA will print for X); explain.py explains a pasted
message against a dump. Reference: shared/reference/host-offload.md; https://openxla.org/xla/errors/error_1200
"""
