"""TPU generation facts: the one table every analysis reads (limits, capacities, buffer rounding).

Figures come from the TPU compiler's own messages and bisections in shared/corpus/tpu-oracle (see its
README); each field says where it was read.
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# Without --tpu the analyses assume the most common Pallas target; findings say so because limits differ 2x.
DEFAULT_TPU = "v5e"


@dataclass(frozen=True, slots=True)
class TpuGeneration:
    """What the analyses need to know about one TPU generation."""

    name: str
    default_limit: int  # default scoped-VMEM limit per instruction
    physical: int  # VMEM usable by one kernel (what "Used X of Y vmem" reports as Y)
    scratch_capacity: int  # bound for separate scratch-operand allocations ("would exceed memory")
    cores: int  # TensorCores per chip visible to one program
    scoped_limit_check: bool  # False on v4: the physical VMEM check fires first (no E1001)
    # Oracle: a (rows, 1) f32 block (row-reduction output) takes only a few KiB on v5e/v6e but the full
    # (rows, 128)-lane tiles on v4, v5p and v7x.
    compact_columns: bool = True
    # Oracle (v4 only): 8-bit elementwise kernels (extsi/extf to 32 bits) get a 32-bit copy of the
    # output block per buffer as compiler-internal scratch; v5e..v7x measured none.
    upcast_8bit_scratch: bool = False
    # A tuple's pointer table (4 bytes per element) is rounded up to this many bytes by TPU buffer
    # assignment: 512 on v4/v5e, 32 on v5p/v6e/v7x (oracle buffer assignments).
    tuple_table_granule: int = 32
    # HBM XLA reports available to one program ("exceeds available HBM (15.75G)"); G is GiB. Read from the
    # compiler's own OOM messages for a 1 TiB program (compile-only; v5p measured at 95.74G).
    hbm_capacity: int = 0
    # VMEM that XLA's memory-space assignment fills with program temporaries, which then take no HBM (the
    # largest color-1 totals in the oracle's memory-usage reports: 112 MiB v5e, 64 MiB v7x; v6e has v5e's
    # 128 MiB VMEM; v5p/v4 reported smaller VMEM).
    vmem_for_temporaries: int = 0
    # MXU width (128 on v4/v5e/v5p, 256 on v6e/v7x): Mosaic's internal scratch for 16-bit dots differs
    # with it (vmem.compiler_scratch rule 2).
    mxu_width: int = 128
    # A K-tiled 16-bit dot keeps its lhs block in vector registers, and spills it, when the contraction block
    # is at least this deep and the rhs block at least this wide (two MXU column passes; four on v7x); with
    # a contraction block of 1024 or more and at least dot_result_spill_min_rows rows it also spills one
    # column pass of the f32 result (vmem.compiler_scratch rule 2, from controlled compiles of jax's matmul
    # and gmm kernels).
    dot_lhs_spill_min_k: int = 512
    dot_lhs_spill_min_n: int = 256
    dot_result_spill_min_rows: int = 1
    # Internal scratch per byte of f32 exp() values computed in a kernel's runtime loop (attention scores;
    # vmem.compiler_scratch rule 3), for values within the vector register file and for larger ones:
    # ragged paged attention measured 1.1-1.4 on v5e/v5p (either size), on v6e 0.75-0.95 / 1.09, on v7x
    # 0.52-1.21 (median 0.9 over 11 kernels) / 1.06 (rounded fits below).
    loop_scores_factor: float = 1.2
    loop_spilled_scores_factor: float = 1.2
    # Internal scratch per byte of an attention forward kernel's f32 score matrices, per unrolled key block
    # (vmem.scores_scratch: medians of the fits, 1.15 on v4 down to 0.85 on v6e).
    scores_forward_factor: float = 1.0
    # VMEM that memory-space assignment fills with whole Pallas operands (layout S(1), no window), for
    # values read by several kernels / by one kernel only.
    # Observed in the oracle's post-optimisation dumps (analyses/vmem/residency.py has the evidence).
    msa_operand_budget: int = 0
    msa_single_use_budget: int = 0
    # Kernel results read again by the program (a backward pass's forward outputs) and values computed on the
    # device for a kernel written straight to VMEM (S(1), no output window) within msa_operand_budget:
    # v5e/v6e did; v5p and v4 wrote them to HBM and prefetched copies; v7x did within its smaller budget
    # (predicted-vs-actual S(1) sets of the corpora: 167 of 239 kernels agree with it, 164 without).
    msa_results_in_vmem: bool = False
    # Two TensorCores behind one device (v4, v5p megacore): a kernel's first parallel grid axis is split
    # between them (analyses/vmem/estimate.steps_per_core).
    megacore: bool = False
    # Sublane tile the compiled program gives a 16-bit matrix a dot reads from HBM. v7x's is 16: its programs
    # re-tile a bf16 weight stack that a layer loop slices from an entry parameter ((8,128)(2,1), the layout
    # jax passes) into a (16,128)(2,1) copy before the loop (analyses/hbm/liveness.py). The after-optimization
    # dumps of fixtures/oracle_new/sharded1..6 show these copies on v7x only (48 of its 49 programs; none on
    # v5e, v5p, v6e).
    dot_operand_sublanes_16bit: int = 8


# Limits from the oracle's bisections and error messages (shared/corpus/tpu-oracle/README.md). v5p:
# "Used 64.00M of 63.94M vmem" bounds scoped use, yet a 64 MiB scratch operand compiled, so its
# scratch capacity is larger; 96 MiB is the figure jax's pipelining doc gives (tpu_info says 64).
GENERATIONS: dict[str, TpuGeneration] = {
    "v4": TpuGeneration("v4", 16 * MIB, 16 * MIB, 16 * MIB, 1, False, compact_columns=False, megacore=True,
                        upcast_8bit_scratch=True, tuple_table_granule=512, hbm_capacity=int(15.25 * GIB),
                        vmem_for_temporaries=16 * MIB, scores_forward_factor=1.15),
    # v5e: "Used 176.82M of 128.00M vmem" (tpu-oracle/real)
    "v5e": TpuGeneration("v5e", 16 * MIB, 128 * MIB, 128 * MIB, 1, True, tuple_table_granule=512,
                         hbm_capacity=int(15.75 * GIB), vmem_for_temporaries=112 * MIB,
                         msa_operand_budget=96 * MIB, msa_results_in_vmem=True, scores_forward_factor=1.1),
    "v5p": TpuGeneration("v5p", 16 * MIB, 64 * MIB - 64 * KIB, 96 * MIB, 1, True, compact_columns=False, megacore=True,
                         hbm_capacity=int(95.74 * GIB), vmem_for_temporaries=64 * MIB,
                         msa_operand_budget=32 * MIB, scores_forward_factor=1.05),
    "v6e": TpuGeneration("v6e", 32 * MIB, 128 * MIB - 64 * KIB, 128 * MIB, 1, True,
                         hbm_capacity=int(31.25 * GIB), vmem_for_temporaries=112 * MIB, mxu_width=256,
                         dot_lhs_spill_min_k=1024, dot_lhs_spill_min_n=512,
                         loop_scores_factor=0.8, loop_spilled_scores_factor=1.1, msa_operand_budget=96 * MIB,
                         msa_results_in_vmem=True, scores_forward_factor=0.85),
    "v7x": TpuGeneration("v7x", 32 * MIB, 64 * MIB, 64 * MIB, 2, True, compact_columns=False,
                         hbm_capacity=int(94.75 * GIB), vmem_for_temporaries=64 * MIB, mxu_width=256,
                         dot_lhs_spill_min_k=1024, dot_lhs_spill_min_n=1024, dot_result_spill_min_rows=2048,
                         loop_scores_factor=0.9, loop_spilled_scores_factor=1.05,
                         msa_operand_budget=16 * MIB, msa_single_use_budget=16 * MIB, msa_results_in_vmem=True,
                         dot_operand_sublanes_16bit=16),
}

# Other names users and tools print for the same chips (jax device_kind, Cloud TPU names, libtpu topologies).
ALIASES = {
    "v5litepod": "v5e", "v5lite": "v5e", "v5": "v5p", "v6": "v6e", "trillium": "v6e", "v6lite": "v6e",
    "tpu7x": "v7x", "v7": "v7x", "tpu7": "v7x", "ironwood": "v7x", "v4i": "v4",
}


def canonical_name(tpu: str) -> str | None:
    """`tpu7x` -> `v7x`, `V5E` -> `v5e`; None when the name is unknown."""
    key = tpu.strip().lower()
    key = ALIASES.get(key, key)
    return key if key in GENERATIONS else None


def generation(tpu: str) -> TpuGeneration:
    """Look up a generation by short name or alias (`v5e`, `tpu7x`, ...); raises ValueError when unknown."""
    key = canonical_name(tpu)
    if key is None:
        raise ValueError(f"unknown TPU generation {tpu!r} (known: {', '.join(GENERATIONS)})")
    return GENERATIONS[key]
