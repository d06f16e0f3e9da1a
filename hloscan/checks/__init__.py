"""Every check module, imported explicitly so the list is greppable (sqlfluff's get_rules idea)."""

from . import mosaic_block_misaligned, mosaic_body_undecodable, vmem_scoped_oom, vmem_scoped_tight  # noqa: F401
from . import padding_waste  # noqa: F401
from . import host_compute, host_offload_output  # noqa: F401
from . import hbm_oom  # noqa: F401
