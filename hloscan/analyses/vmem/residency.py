"""Which kernel operands XLA's memory-space assignment (MSA) will place whole in VMEM (layout `S(1)`).

Why it matters: a Pallas operand that MSA prefetched whole into VMEM gets no pipelined window, so the
kernel's scoped VMEM is smaller by that window's buffers (`estimate._window_block`, `in_vmem`). A
post-optimisation dump shows it as `S(1)` in the operand's layout; a pre-optimisation dump
(`before_optimizations.txt`, what users usually have) does not, so the residency has to be predicted.

Evidence (after_optimizations.txt of every flash/splash attention case in shared/corpus/tpu-oracle/real and
fixtures/oracle_new/real, compared with the compiler's per-kernel `used_scoped_memory_configs`; the
estimate computed from the post-optimisation dump, which knows the `S(1)` operands, matched the compiler's
figure exactly for kernels without internal scratch, e.g. flash-attention backward dkv 786432 on v5e/v6e):

- Values read by two or more `tpu_custom_call`s of one computation (q, k, v, dO and the softmax
  statistics shared by the dq and dkv kernels of an attention backward pass) were `S(1)` on every generation
  with spare VMEM: up to 6 x 8 MiB on v5e/v6e, 4 x 8 MiB on v5p (the fifth not), 2 x 8 MiB on v7x (the
  third not), none on v4 (16 MiB VMEM, all of it the scoped limit). The kernel that first produces or
  reads a value in another computation (the forward kernel) kept its windows.
- Values read by a single kernel were `S(1)` on v7x only (flash/splash forward: 2 x 8 MiB of 3, or
  3 x 4 MiB), and on v5e for arrays of at most 2 MiB (f32[1,4,1024,64]); 4 MiB and 8 MiB single-use
  arrays kept their windows on v5e, v5p and v6e. (The v5e case is a single one and modelled as no
  single-use residency: ragged/paged attention's small single-use queries kept their windows on v5e.)
- megablox gmm's single-use lhs and a K-tiled matmul's operands were S(1) on v7x and yet windowed: their
  blocks are not contiguous ranges of the array (several tile rows, part of each), so the kernel copies them
  into window buffers (`estimate._keeps_window_in_vmem`); a gmm whose lhs block spans whole rows (v7x
  1024x1024 of 2048x1024) had no window. A matmul without scratch (v7x bf16 1024x4096x256, synthetic corpus)
  measured 5242880 bytes: its 16 MiB lhs had no window.
- Which ones when not all fit: on v7x ragged paged attention's 16 MiB KV cache (read by one kernel) was
  S(1) and its 0.5 MiB query was not, so larger arrays are taken first.

- Kernel RESULTS that feed other kernels, returned by the program or not (a backward pass's forward kernel: its
  output and softmax statistics, read by the dq/dkv kernels directly or through reductions and
  broadcasts, possibly from another computation through a `call`) were written straight to VMEM on v5e
  and v6e (flash: 3 of 3, splash: the 2 read back of 5; removing their output windows made the forward
  kernel's estimate exact, e.g. 851968 on v5e), not on v4 or v5p (written to HBM, then prefetched), and
  on v7x for some (not modelled there). `predict_resident_results` places them after the inputs, within
  the same budget counted over the module.

The rule: within a computation, shared kernel inputs first, then (where the generation prefetches them)
single-use ones, in operand order, while the running total stays within the generation's
`TpuGeneration.msa_operand_budget` / `msa_single_use_budget`. MSA's real choice comes from a cost model;
this is an estimate and the finding says so.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import replace
from typing import Any, Callable, Iterable

from hloscan.analyses.tpu import TpuGeneration
from hloscan.analyses.vmem.tiling import hbm_array_bytes
from hloscan.hlo.ir import ELEMENT_BITS, Computation, Instruction, Layout, Module, Shape
from hloscan.hlo.layout import unpadded_bytes

# Ops that only re-label an array: a kernel reading `bitcast(x)` reads x.
_ALIASING_OPS = frozenset({"bitcast", "reshape", "copy"})


def _root(comp: Computation, name: str | None, depth: int = 0) -> str | None:
    """The value behind `name`: through bitcasts, reshapes and copies, and one key for identical
    broadcasts (jax emits one `broadcast_in_dim` of the softmax statistics per kernel; XLA's CSE merges
    them before memory-space assignment, so MSA sees one value read by both kernels)."""
    inst = comp.by_name.get(name) if name is not None else None
    if inst is None or depth > 16:
        return name
    if inst.opcode in _ALIASING_OPS and len(inst.operands) == 1:
        source = _root(comp, inst.operands[0].name, depth + 1)
        # A relayout keeps the identity of its source (two kernels reading one reshaped array read one value)
        # but is computed on the device (`_produced_on_device`).
        return source if _relabels(comp, inst) else f"relayout({source}){inst.shape.dims}"
    if inst.opcode == "broadcast" and len(inst.operands) == 1:
        source = _root(comp, inst.operands[0].name, depth + 1)
        return f"broadcast({source}){inst.shape.dims}{inst.attr('dimensions')}"
    return name


def _relabels(comp: Computation, inst: Instruction) -> bool:
    """Whether a bitcast / reshape / copy only re-labels its operand. A reshape that changes either of the two
    minor dimensions moves data between tiles, so XLA:TPU computes it as a relayout on the device: pooling's
    bf16[8,128,128,128] -> [512,2,64,256] (pairs of columns side by side in the lanes) was an S(1) value on
    v5e that the kernel read with no window (fixtures/oracle_new/user3)."""
    if inst.opcode != "reshape":
        return True
    source = comp.operand_shape(inst, 0)
    if source is None or not source.is_array or not inst.shape.is_array:
        return True
    return tuple(source.dims[-2:]) == tuple(inst.shape.dims[-2:])


def _array_bytes(shape: Shape) -> int:
    """Bytes of the whole array in its default TPU (HBM) layout."""
    return hbm_array_bytes(shape.dims, ELEMENT_BITS.get(shape.element_type, 32) or 32)


def predict_resident_operands(comp: Computation, calls: Iterable[Instruction], gen: TpuGeneration,
                              module: Module | None = None) -> dict[str, frozenset[int]]:
    """For each kernel (instruction name) of `comp`, the operand positions predicted to be `S(1)`.
    With `module`, a value passed down through `call`s is one value wherever a kernel reads it."""
    calls = list(calls)
    if any(has_vmem_layout(comp, inst) for inst in calls):
        return {}  # a post-optimisation dump: the layouts already say where MSA put things
    readers = local = _local_readers(comp, calls)
    first_readers: dict[str, str] = {}
    if module is not None:
        readers, first_readers = _module_readers(module, comp, local)
        # Generations that prefetch single-use values (v7x) prefetch for the first kernel too, and a value
        # relaid out on the device (v5e/v6e) is produced in VMEM whoever reads it first.
        first_readers = {root: kernel for root, kernel in first_readers.items() if not gen.msa_single_use_budget
                         and not (gen.msa_results_in_vmem and _produced_on_device(comp, root, module))}
    in_place = _written_in_place(comp, calls, local)
    sizes = {root: size for root, size in _operand_sizes(comp, calls).items() if root not in in_place}
    placed = _place_within_budgets(comp, sizes, readers, gen, module)
    out = {}
    for inst in calls:
        positions = frozenset(pos for pos, op in enumerate(inst.operands)
                              if (root := _root(comp, op.name)) in placed and first_readers.get(root) != inst.name)
        if positions:
            out[inst.name] = positions
    return out


def _local_readers(comp: Computation, calls: list[Instruction]) -> dict[str, set[str]]:
    """The kernels of `comp` reading each value (through relabelling ops: `_root`)."""
    readers: dict[str, set[str]] = {}
    for inst in calls:
        for op in inst.operands:
            root = _root(comp, op.name)
            if root is not None:
                readers.setdefault(root, set()).add(inst.name)
    return readers


# Data bytes from which an array written in place stays in HBM (`_written_in_place`).
_IN_PLACE_STATE_BYTES = 1 << 20


def _written_in_place(comp: Computation, calls: list[Instruction], readers: dict[str, set[str]]) -> set[str]:
    """Arrays of at least `_IN_PLACE_STATE_BYTES` of data that a kernel writes its result into
    (`input_output_aliases`, the custom call's output_to_operand_aliasing) and no other kernel reads: the result's
    buffer is the operand's, so MSA leaves it in HBM. On v7x, where single-use values are prefetched, such state
    arrays (2.25-64 MiB: Sophia, schedule-free AdamW and CAME moments, an FDTD stencil's fields,
    fixtures/oracle_new/user13-19) all kept their windows and the operands read beside them took the VMEM instead;
    small columns of per-row statistics updated in place (f32[4096, 1], 16 KiB of data) were moved whole
    (Adam-mini, CAME; every generation)."""
    written: dict[str, set[str]] = {}
    for inst in calls:
        for pos in _aliased_operands(inst):
            shape = comp.operand_shape(inst, pos) if pos < len(inst.operands) else None
            if shape is None or not shape.is_array or unpadded_bytes(shape) < _IN_PLACE_STATE_BYTES:
                continue
            if (root := _root(comp, inst.operands[pos].name)) is not None:
                written.setdefault(root, set()).add(inst.name)
    return {root for root, kernels in written.items() if readers.get(root, set()) <= kernels}


def _aliased_operands(inst: Instruction) -> list[int]:
    """Operand positions of `output_to_operand_aliasing={{0}: (1, {}), ...}`."""
    text = inst.attr("output_to_operand_aliasing") or ""
    return [int(m) for m in re.findall(r"\(\s*(\d+)\s*,", text)]


def _operand_sizes(comp: Computation, calls: list[Instruction]) -> dict[str, int]:
    """Bytes of each array value the kernels of `comp` read, in its default TPU layout."""
    sizes: dict[str, int] = {}
    for inst in calls:
        for pos, op in enumerate(inst.operands):
            root = _root(comp, op.name)
            shape = comp.operand_shape(inst, pos)
            if root is not None and shape is not None and shape.is_array and shape.dims:
                sizes.setdefault(root, _array_bytes(shape))
    return sizes


def _place_within_budgets(comp: Computation, sizes: dict[str, int], readers: dict[str, set[str]],
                          gen: TpuGeneration, module: Module | None = None) -> set[str]:
    """Shared values first, then values computed on the device, then single-use ones, each while the
    running total fits the generation's budget for its kind."""
    placed: set[str] = set()
    used = 0
    for kind in ("shared", "produced", "single"):
        budget = gen.msa_single_use_budget if kind == "single" else gen.msa_operand_budget
        # Largest first: on v7x a 16 MiB KV cache read by one kernel was S(1) and its 0.5 MiB query was not.
        for root, size in sorted(sizes.items(), key=lambda item: -item[1]):
            if root in placed or used + size > budget or _residency_kind(comp, root, readers[root], gen, module) != kind:
                continue
            placed.add(root)
            used += size
    return placed


def _module_readers(module: Module, comp: Computation, local: dict[str, set[str]],
                    ) -> tuple[dict[str, set[str]], dict[str, str]]:
    """The kernels reading each value of `comp` anywhere in the module (a value passed through `call`s is
    followed up to where it is defined), and for program inputs the kernel of `comp` that reads them first.

    A backward program reads q, k and v in its forward kernel (inside a called `jit(fwd)` computation) and
    again in its backward kernels (in another): one value read by several kernels. Memory-space assignment
    prefetched it into VMEM for the later readers (the fused splash dkv kernel's q, k, v were S(1) on v5e
    and v6e). The program's first kernel, with nothing before it to hide a prefetch behind, read the program
    inputs from HBM on the generations that prefetch no single-use value (every flash/splash forward kernel
    of a backward program kept its q, k, v windows on v5e/v5p/v6e; on v7x they were S(1)); `first` names
    it for such values."""
    by_origin = _kernel_order(module)
    first_kernel = by_origin.get(_FIRST, [None])[0]
    readers: dict[str, set[str]] = {}
    first: dict[str, str] = {}
    for root, names in local.items():
        origin = _origin(module, comp, root)
        everywhere = by_origin.get(origin, [])
        readers[root] = names | {f"{c}/{k}" for c, k in everywhere if c != comp.name}
        if (everywhere and everywhere[0] == first_kernel and first_kernel[0] == comp.name
                and _is_program_input(module, origin)):
            first[root] = first_kernel[1]
    return readers, first


_FIRST = ("", "")  # _kernel_order's key for the program's first kernel


def _kernel_order(module: Module) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """For each value origin (`_origin`), the (computation, kernel) pairs that read it, in program order;
    under `_FIRST`, the program's first kernel."""
    def build(module: Module) -> dict[tuple[str, str], list[tuple[str, str]]]:
        out: dict[tuple[str, str], list[tuple[str, str]]] = {}
        seen: set[str] = set()

        def visit(comp: Computation, depth: int) -> None:
            if comp.name in seen or depth > 16:
                return
            seen.add(comp.name)
            for inst in comp.instructions:
                if inst.opcode == "call":
                    callee = module.computations_by_name.get((inst.attr("to_apply") or "").lstrip("%"))
                    if callee is not None:
                        visit(callee, depth + 1)
                elif inst.custom_call_target == "tpu_custom_call":
                    out.setdefault(_FIRST, [(comp.name, inst.name)])
                    for op in inst.operands:
                        root = _root(comp, op.name)
                        kernels = out.setdefault(_origin(module, comp, root), []) if root is not None else None
                        if kernels is not None and (comp.name, inst.name) not in kernels:
                            kernels.append((comp.name, inst.name))

        visit(module.entry, 0)
        return out
    return _memo(_ORDER, module, build)


def _origin(module: Module, comp: Computation, root: str, depth: int = 0) -> tuple[str, str]:
    """Where the value `root` of `comp` is defined: through parameters of computations called from one
    place, to the caller's operand."""
    inst = comp.by_name.get(root)
    sites = _call_sites(module).get(comp.name, [])
    if inst is None or inst.opcode != "parameter" or len(sites) != 1 or depth > 16:
        return comp.name, root
    caller, call = sites[0]
    index = next((i for i, p in comp.parameter_instructions.items() if p.name == root), None)
    if index is None or index >= len(call.operands):
        return comp.name, root
    return _origin(module, caller, _root(caller, call.operands[index].name) or "", depth + 1)


def _is_program_input(module: Module, origin: tuple[str, str]) -> bool:
    comp = module.computations_by_name.get(origin[0])
    inst = comp.by_name.get(origin[1]) if comp is not None else None
    return comp is not None and comp.is_entry and inst is not None and inst.opcode == "parameter"


def _residency_kind(comp: Computation, root: str, readers: set[str], gen: TpuGeneration,
                    module: Module | None = None) -> str:
    """"shared" (read by several kernels), "produced" (computed on the device, e.g. a broadcast of the
    softmax statistics, where the generation writes such values straight to VMEM) or "single"."""
    if len(readers) >= 2:
        return "shared"
    if gen.msa_results_in_vmem and _produced_on_device(comp, root, module):
        return "produced"
    return "single"


# Values that exist before the computation runs (or are folded into the program image), not produced by it.
_NOT_PRODUCED = frozenset({"parameter", "constant"})


def _produced_on_device(comp: Computation, root: str, module: Module | None = None) -> bool:
    """Whether the kernel operand behind `root` is computed on the device (a broadcast, fusion, dot,
    transpose, ...), not read from a program parameter or constant. On v5e/v6e memory-space assignment
    defines such values in VMEM (S(1)) when they fit, instead of writing them to HBM for the kernel to window
    in. With `module`, a parameter of a called computation is judged where its value is defined: a library
    that wraps its kernel in a `jit` (tokamax's attention) transposes q, k and v in the caller and passes them
    in, and those transposes were S(1) operands of its kernels on v5e/v6e (fixtures/oracle_new/user2)."""
    if root.startswith(("broadcast(", "relayout(")):
        return True  # _root's keys for a broadcast and a relayout
    inst = comp.by_name.get(root)
    if inst is not None and inst.opcode == "parameter" and module is not None:
        origin_comp, origin = _origin(module, comp, root)
        if origin_comp != comp.name and origin:
            return _produced_on_device(module.computations_by_name[origin_comp], origin)
    if inst is not None and inst.opcode == "parameter":
        return _relaid_out(inst.shape)
    if inst is None or inst.opcode in _NOT_PRODUCED:
        return False
    if inst.opcode == "get-tuple-element" and inst.operands:
        source = comp.by_name.get(inst.operands[0].name)
        return source is not None and source.opcode not in _NOT_PRODUCED
    return True


def _relaid_out(shape: Shape) -> bool:
    """Whether XLA:TPU gives an array (a parameter, or a kernel result the program returns) a layout with
    another minor dimension, so that a relayout `copy` computed on the device sits between it and the
    kernel, whose operand layout is row-major.

    Layout assignment takes the minor dimension that pads least: an array is relaid out when moving some
    dimension into the lanes makes it smaller in the tiled HBM layout. Evidence (entry parameters in the
    post-optimisation dumps of the oracle folders): f32[1,4,1024,64] laid out {2,3,1,0} and copied to
    {3,2,1,0} for the flash kernels, the copies S(1) on v5e and v6e (every head-dim-64 flash case);
    bf16[4,4096,320] (GroupNorm's channels) {1,2,0}; [1000,40], [1600,300] and [100,200] of every dtype
    {0,1}; while head-dim-128 arrays, [24,1000], [3,5000] and [7,129] kept row-major (they pad least as
    they are)."""
    if not shape.is_array or len(shape.dims) < 2:
        return False
    dims, bits = tuple(shape.dims), ELEMENT_BITS.get(shape.element_type, 32) or 32
    as_is = hbm_array_bytes(dims, bits)
    return any(hbm_array_bytes(dims[:i] + dims[i + 1:] + (dims[i],), bits) < as_is for i in range(len(dims) - 1))


def resident_arrays(module: Module, comp: Computation, calls: Iterable[Instruction],
                    resident: dict[str, frozenset[int]]) -> dict[tuple[str, str], int]:
    """The arrays `predict_resident_operands` placed in VMEM for the kernels of `comp`, by where each is
    defined (`_origin`) and with its bytes: q, k and v read by a forward kernel in one called computation
    and by the backward kernels in another are one array in VMEM, not two."""
    sizes: dict[tuple[str, str], int] = {}
    for inst in calls:
        for pos in resident.get(inst.name, ()):
            shape = comp.operand_shape(inst, pos)
            root = _root(comp, inst.operands[pos].name)
            if root is not None and shape is not None and shape.is_array:
                sizes[_origin(module, comp, root)] = _array_bytes(shape)
    return sizes


def predict_resident_results(module: Module, calls: Iterable[tuple[Computation, Instruction]],
                             gen: TpuGeneration, used: int) -> dict[tuple[str, str], frozenset[int]]:
    """Kernel results that feed other kernels (in a backward pass the forward kernel's output and softmax
    statistics, read by the dq/dkv kernels directly or through reductions) are written straight to VMEM
    (`S(1)`), so the kernel has no output window for them; one the program also returns is copied out later
    (the forward output o of a jax.vjp program, returned and read by dq/dkv, was S(1) on v5e and v6e in all
    six flash and splash backward cases that return it).

    Evidence (after_optimizations.txt of the flash/splash backward cases): every such result was S(1) on
    v5e and v6e (flash: all 3; splash: the 2 read back, not the 3 unread ones); none on v4 and v5p (v5p
    wrote them to HBM and prefetched copies for the backward kernels); on v7x 2 of 3 (flash) and 2 of 5
    (splash), predicted there within its 16 MiB budget (`TpuGeneration.msa_results_in_vmem`). A result an
    XLA op reads on the device is written to VMEM too: paged attention's output (read by an elementwise op,
    then returned) and fused splash backward's dq output (read by a reduction) were S(1) on v5e/v6e/v7x in
    the compiler's allocation lists (fixtures/oracle_new/*/LLO_BREAKDOWN.tsv). They come after the kernels'
    resident inputs (`used` bytes, counted over the whole module), largest first, within the same budget.

    Results XLA relays out (`_relaid_out`: a head-dim-64 output, whose program-level layout puts the long
    axis in the lanes) are copied on the device after the kernel, and the kernel writes them to VMEM too:
    every head-dim-64 output of the flash fwd/dq/dkv and splash fwd kernels of the oracle folders was an
    S(1) operand in the compiler's allocation list on v5e, v6e and v7x (14 kernels), and a windowed HBM
    one on v5p.
    Returns, per (computation, kernel), the positions `len(inst.operands) + i` of result leaf i."""
    if not gen.msa_results_in_vmem:
        return {}
    leaves = []
    for comp, inst in calls:
        shapes = [leaf for _, leaf in inst.shape.leaves()] if inst.shape.is_tuple else [inst.shape]
        for i, shape in enumerate(shapes):
            if not (shape.is_array and shape.dims):
                continue
            fate = _result_fate(module, comp, inst, i)
            if "kernel" in fate or "device" in fate or ("program" in fate and _relaid_out(shape)):
                leaves.append((_array_bytes(shape), comp.name, inst, i))
    out: dict[tuple[str, str], set[int]] = {}
    for size, comp_name, inst, i in sorted(leaves, key=lambda item: -item[0]):
        if used + size <= gen.msa_operand_budget:
            out.setdefault((comp_name, inst.name), set()).add(len(inst.operands) + i)
            used += size
    return {key: frozenset(pos) for key, pos in out.items()}


def _result_fate(module: Module, comp: Computation, inst: Instruction, leaf: int) -> frozenset[str]:
    """Where result leaf `leaf` of `inst` goes: "kernel" when it feeds another `tpu_custom_call` (directly
    or through other ops, as a forward kernel's statistics feed the dq/dkv kernels), "device" when an XLA op
    reads the result itself (not only a relabelled view of it), "program" when the entry computation returns
    it. Followed through get-tuple-element, tuples, calls and their returns."""
    callers = _call_sites(module)
    computations = module.computations_by_name
    fate: set[str] = set()
    seen: set[tuple[str, str, int | None, bool]] = set()
    # (computation, value, tuple index followed within that value or None, derived from the result)
    work: list[tuple[Computation, str, int | None, bool]] = [
        (comp, inst.name, leaf if inst.shape.is_tuple else None, False)]
    while work:
        c, name, index, derived = work.pop()
        if (c.name, name, index, derived) in seen:
            continue
        if len(seen) > 512:
            return frozenset()  # too tangled to tell: keep the windows
        seen.add((c.name, name, index, derived))
        if name == c.root.name:
            # Returned by the program: still written to VMEM first when a kernel reads it (a backward pass's
            # forward output o, returned and read by dq/dkv, was S(1) on v5e/v6e), then copied out.
            work.extend((caller, call.name, index, derived) for caller, call in callers.get(c.name, ()))
            if c is module.entry:
                fate.add("program")  # leaves the program, in the program's layout
        for user in _users(c).get(name, ()):
            if user.opcode == "get-tuple-element":
                if index is None or user.attr("index") == str(index):
                    work.append((c, user.name, None, derived))
            elif user.opcode == "tuple" and index is None:
                work.extend((c, user.name, pos, derived) for pos, op in enumerate(user.operands) if op.name == name)
            elif user.opcode == "call":
                callee = computations.get((user.attr("to_apply") or "").lstrip("%"))
                params = callee.parameter_instructions if callee is not None else {}
                work.extend((callee, params[pos].name, index, derived)
                            for pos, op in enumerate(user.operands) if op.name == name and pos in params)
            elif index is not None:
                if not derived:
                    return frozenset()  # a whole tuple passed on (a while loop, ...): not followed
            elif user.custom_call_target == "tpu_custom_call":
                fate.add("kernel")
            else:
                relabels = user.opcode in _ALIASING_OPS or user.opcode == "broadcast"
                if not relabels and not derived:
                    fate.add("device")  # an XLA op computes something from the result itself
                work.append((c, user.name, None, derived or not relabels))
    return frozenset(fate)


def _users(comp: Computation) -> dict[str, list[Instruction]]:
    """The instructions reading each value of `comp`."""
    def build(comp: Computation) -> dict[str, list[Instruction]]:
        users: dict[str, list[Instruction]] = {}
        for inst in comp.instructions:
            for op in inst.operands:
                users.setdefault(op.name, []).append(inst)
        return users
    return _memo(_USERS, comp, build)


def _call_sites(module: Module) -> dict[str, list[tuple[Computation, Instruction]]]:
    """The `call` instructions of `module`, by callee name."""
    def build(module: Module) -> dict[str, list[tuple[Computation, Instruction]]]:
        sites: dict[str, list[tuple[Computation, Instruction]]] = {}
        for c, inst in module.with_opcode("call"):
            sites.setdefault((inst.attr("to_apply") or "").lstrip("%"), []).append((c, inst))
        return sites
    return _memo(_CALLERS, module, build)


def _memo(cache: dict[int, tuple[weakref.ref, Any]], owner: Any, build: Callable[[Any], Any]) -> Any:
    """`build(owner)`, computed once per IR object and dropped when that object is freed: a cache keyed by
    the object itself would keep every module a run has read alive."""
    key = id(owner)
    entry = cache.get(key)
    if entry is not None and entry[0]() is owner:
        return entry[1]
    value = build(owner)
    cache[key] = (weakref.ref(owner, lambda _ref: cache.pop(key, None)), value)
    return value


_USERS: dict[int, tuple[weakref.ref, Any]] = {}
_CALLERS: dict[int, tuple[weakref.ref, Any]] = {}
_ORDER: dict[int, tuple[weakref.ref, Any]] = {}


def has_vmem_layout(comp: Computation, inst: Instruction, results: bool = False) -> bool:
    """An operand (or, with `results`, a result) of `inst` already laid out in VMEM (S(1)): the dump is
    post-optimisation, and its layouts say where memory-space assignment put things."""
    shapes = [comp.operand_shape(inst, pos) for pos in range(len(inst.operands))]
    if results:
        shapes += [leaf for _, leaf in inst.shape.leaves()] if inst.shape.is_tuple else [inst.shape]
    return any(s is not None and s.is_array and s.memory_space == 1 for s in shapes)


def in_vmem(shape: Shape) -> Shape:
    """`shape` with memory space 1 (VMEM), as a post-optimisation dump would print it."""
    return in_memory_space(shape, 1)


def in_memory_space(shape: Shape, space: int) -> Shape:
    """`shape` with memory space `space` (its layout's S(n); a default layout when it has none)."""
    layout = shape.layout or Layout(tuple(reversed(range(len(shape.dims)))))
    return replace(shape, layout=replace(layout, memory_space=space))
