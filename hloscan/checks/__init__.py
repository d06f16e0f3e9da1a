"""One file per rule, one sub-package per rule family (its `__init__` declares the family: code prefix, XLA
errors, run-wide options). Every rule module is imported here, explicitly, so the list is greppable
(sqlfluff's get_rules idea); importing this package registers them all."""

from hloscan.checks.hbm import hlo401_hbm_out_of_memory, hlo402_hbm_tight  # noqa: F401
from hloscan.checks.host_offload import hlo101_host_offload_output, hlo102_host_compute  # noqa: F401
from hloscan.checks.layouts import hlo301_padding_waste  # noqa: F401
from hloscan.checks.vmem import (hlo201_scoped_vmem_exceeds_limit, hlo202_scoped_vmem_tight,  # noqa: F401
                                 hlo203_mosaic_block_misaligned, hlo204_mosaic_body_undecodable,
                                 hlo205_vmem_capacity_exceeded)
