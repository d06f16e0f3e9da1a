"""Every check module, imported explicitly so the list is greppable (sqlfluff's get_rules idea)."""

from hloscan.checks.host_offload import hlo101_host_offload_output, hlo102_host_compute  # noqa: F401
from hloscan.checks.layouts import hlo301_padding_waste  # noqa: F401
from hloscan.checks.vmem import (hlo201_scoped_vmem_exceeds_limit, hlo202_scoped_vmem_tight,  # noqa: F401
                                 mosaic_block_misaligned, mosaic_body_undecodable)
