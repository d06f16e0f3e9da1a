"""Real Pallas kernels (serialized Mosaic bodies from tpu-oracle cases) for the VMEM checks' doc examples."""

from __future__ import annotations

import textwrap

# jax's pallas_call of a (bm, K) x (K, bn) f32 matmul, grid (2, 2); oracle case v5e__mm_float32_512x2048x512.
MATMUL_F32_512x2048x512 = (
    "TUzvUgFNTElSMjMuMC4wZ2l0AAEfBwEDBQEDBwMNCQsNDxETA9+zGwGrBxMTCwsLCw8PhQsLCwsPDw8LCwsLCw8PDw8PEwsP"
    "SwsTCwtTCwsLCwsXGwtTGwtTGwtTGxsbDw8PDx8PDx8THwsPCw8fKwsLCwsLDwsPHyMLC1MLEwUJYZFNKgIBGw8HDwcfJycn"
    "Ix8fHwsCygkfAwMbbwMDG20FFQUXBRkFGxEZAB2Vl2FmZmluZV9tYXA8KGQwLCBkMSkgLT4gKGQwLCBkMSk+AAUdBR8NEwUh"
    "HSlxHSl3EQUBBSMFJQUnBSkFKx0LdR0Lex2Bgx0LiR0LnQMDOTsFLREFPQMRP0EHQ0VHSSFLIQlNT69RUwUvAQWtrQ0RBTEj"
    "BQUhAgAAAAAAAAACAAAAAAAAAAUzBTUFNwU5BTsBB1VbYQMFFVcXWQkjIwUFIQACAAAAAAAAAAgAAAAAAAADBRVdF18JJSMF"
    "BSEACAAAAAAAAAACAAAAAAAAAwUVYxdlCScjBQUhAAIAAAAAAAAAAgAAAAAAAAMFBxkJIwMFBxkJJQMFBxkJJxEBAREDAR0r"
    "cxUtLS0NB/YKQ1cdK3kVLy8tDQf2CltvAwMbfyUJCQAAAAAFPR2FhwU/FTMzLQ0H9gozqQMJjbGPD5EPkw8FQQVDBUUFRwVJ"
    "HZmbBUsVNTUtDQf2ChktAwehD6Olp6kFTQVPIwEJIQEAAAABAAAAAgAAAAAAAAAFUSMBAQEjdHB1Lm1lbW9yeV9zcGFjZTx2"
    "bWVtPgAjdHB1LmRpbWVuc2lvbl9zZW1hbnRpY3M8YXJiaXRyYXJ5PgAjdHB1LmNvcmVfdHlwZTx0Yz4AI3RwdS5kb3RfZGlt"
    "ZW5zaW9uX251bWJlcnM8WzFdLCBbMF0sIFswXSwgWzFdLCBbMCwgMCwgMSwgMV0sIFtdLCBbXT4AAQICAwECBAsnBQIQAhAH"
    "F6sFAhACQAcTF6sFAkACEAcTF6sFAhACEAcTBQsBAQsNDwEFBQEBBQEBJwUCEAJABycFAkACEAcBCQQ6AwUBEQE3BwMBEQUR"
    "AT0HAyE3CwEBAQELAQ0BDwEDAx0DAwMDAx0DAwMJBh0DFQcFCw0DAx8DAwMDAx8DAwMJBh8DFwcHERMDAzF9AwkLBzGLAwkH"
    "DxUXAwMRAwMDAwMRAwMDCQYRAwkHCRsdDQURnwkZCRsdBwABBREBZwcDCQ8FAQEBAQMDAQUDAQMDAQUDAQcEAQUBBQURAWkH"
    "AwkPBQEBAQEDAwEFAwEDAwEFAwEHBAEFBQMFEQFrBwMHCwUBAQEBAwMBBQMBBwQBBQEDBgMBBQEAiglTESkJFQ0dJx0lMRsd"
    "HQsjISMpLRELGRkZDR0lXTcTHSMXGRkVHw8JHRFidWlsdGluAHN0YWJsZV9tb3NhaWMAdHB1AG1vZHVsZQBhcml0aC5jb25z"
    "dGFudABmdW5jLmZ1bmMAZnVuYy5yZXR1cm4AdmVjdG9yLmxvYWQAdHB1Lm1hdG11bAB0cHUudmVjdG9yX3N0b3JlAGZ1bmN0"
    "aW9uX3R5cGUAc3ltX25hbWUAYnVpbGRfa2VybmVsLjxsb2NhbHM+Lmtlcm4AL3NyYy8uLy4vLi8uLy4vLi8uLy4vLi8uLy5f"
    "L3RwdV9vcmFjbGUvZ2VuLnB5AHRyYW5zZm9ybV9pbmRpY2VzAHdpbmRvd19ib3VuZHMAdmFsdWUAdHJhbnNmb3JtXzAAdHJh"
    "bnNmb3JtXzEAdHJhbnNmb3JtXzIAZ2V0OgBnZXQvZ2V0AHN0YWJsZV9tb3NhaWMudmVyc2lvbgBkaW1lbnNpb25fc2VtYW50"
    "aWNzAGl0ZXJhdGlvbl9ib3VuZHMAc2NhbGFyX3ByZWZldGNoAHNjcmF0Y2hfb3BlcmFuZHMAa2VybgB0cHUuY29yZV90eXBl"
    "AHdpbmRvd19wYXJhbXMAZG90X2dlbmVyYWw6AGRvdF9nZW5lcmFsL2RvdF9nZW5lcmFsAGRpbWVuc2lvbl9udW1iZXJzAHRy"
    "YW5zcG9zZV9saHMAdHJhbnNwb3NlX2xoc19oaW50AHRyYW5zcG9zZV9yaHMAc3dhcDoAc3dhcC9zd2FwAGFkZABvcGVyYW5k"
    "U2VnbWVudFNpemVzAHN0cmlkZXMA"
)
# An elementwise kernel over (400, 300) blocks of an int8 array; oracle case v7x__ew_odd1_int8_1600x300_blk400x300.
EW_INT8_BLOCK_400x300 = (
    "TUzvUgFNTElSMjMuMC4wZ2l0AAEnCQEDBQcBAwkDEwsNDxETFRcZGwPdtRUBrQcLCxMPCwsLDw8PCwsLUwsLEw8LCw8TDw8T"
    "Cw9LCxMLhQtTCwsLCwsTGwsbCxsbDw8LDwsPHw8PDw8LHw8fEw8LDwsPHwsPDw8fCw8LDx8jCw8LUwsTBQeRYU0HA1kBFQ8H"
    "DycfHwsfHwsCEggfBR0FHwMDD2EdlZcFIQUjBSUdY2UdgYMRBQEFJwUpBSsjBQUhkAEAAAAAAAAsAQAAAAAAAAUtDREDAw9f"
    "HQVrBS8FMRVzeQMDi7MdBZMdBZ0DAzU3BTMRBT0DETs9Cz9DRUcVSRUNS02xT1EFNQEFra0ND2FmZmluZV9tYXA8KGQwLCBk"
    "MSkgLT4gKGQwLCBkMSk+AAU3IwUFIQQAAAAAAAAAAQAAAAAAAAAFOQU7BT0FPwVBAQVTVwMFF1UbHQkZAwUXWRsdCR8DBQsh"
    "DRkDBQshDR8RAQERAwEFQx1naQVFFSUlLQMHxgsrQR0nbx0pcRUrKx11dwVHLQMHwgs5px0Fey0DB8YLJUMDAw9/EQEJBUkd"
    "hYcFSx0FiS0DB9ILTVsFTR0njx0pkRUvLy0DB9YLK1EFTx2ZmwVRFTExLQMH1gsZJQMHoaOlp6mrBVMREwAFVSMBCSEBAAAA"
    "AQAAAAIAAAAAAAAABVcjAQEBI3RwdS5kaW1lbnNpb25fc2VtYW50aWNzPGFyYml0cmFyeT4AI3RwdS5tZW1vcnlfc3BhY2U8"
    "dm1lbT4AI3RwdS5jb3JlX3R5cGU8dGM+ACNhcml0aC5vdmVyZmxvdzxub25lPgABAgIDAQIEF68FggxiCQ1BJwWCDGIJDScF"
    "ggxiCQEBQQUJAQEHBwEFBQEBBQEBAQkEngIFAREBMwcDAQ0FEQE5BwMfNwkBAQEBBwEHAQMDEQcDAwMDEQcDAwkGEQMJBwUJ"
    "CwsGbQMLAw0DAxN9AwENBhMDCwMRDwcTLQMLBQ8TEQeNLQMJAxUDAwkHAwMDAwkHAwMJBgkDCQcHGRsTBQmfCRcHGRsHAAEF"
    "EQFbBwMHCwUBAQEBAwMBIwMBBwQBBQEDBREBXQcDBwsFAQEBAQMDASMDAQcEAQUBAwYDAQUBAJ4KWREpCRUNHQkLWxELHR0L"
    "IyEjKS1VLRkdGSUNEx03XSMbFyMZGRkVHw8NCR0RYnVpbHRpbgBzdGFibGVfbW9zYWljAHRwdQBhcml0aABtb2R1bGUAYXJp"
    "dGguY29uc3RhbnQAZnVuYy5mdW5jAGZ1bmMucmV0dXJuAHZlY3Rvci5sb2FkAGFyaXRoLmV4dHNpAHZlY3Rvci5icm9hZGNh"
    "c3QAYXJpdGgubXVsaQBhcml0aC50cnVuY2kAdHB1LnZlY3Rvcl9zdG9yZQAvc3JjLy4vLi8uLy4vLi8uLy4vLi8uLy4vLl8v"
    "dHB1X29yYWNsZS9nZW4ucHkAYnVpbGRfa2VybmVsLjxsb2NhbHM+Lmtlcm4AZnVuY3Rpb25fdHlwZQBzeW1fbmFtZQB2YWx1"
    "ZQB0cmFuc2Zvcm1faW5kaWNlcwB0cmFuc2Zvcm1fMAB3aW5kb3dfYm91bmRzAHRyYW5zZm9ybV8xAGNvbnZlcnRfZWxlbWVu"
    "dF90eXBlOgBjb252ZXJ0X2VsZW1lbnRfdHlwZS9jb252ZXJ0X2VsZW1lbnRfdHlwZQBzdGFibGVfbW9zYWljLnZlcnNpb24A"
    "ZGltZW5zaW9uX3NlbWFudGljcwBpdGVyYXRpb25fYm91bmRzAHNjYWxhcl9wcmVmZXRjaABzY3JhdGNoX29wZXJhbmRzAGtl"
    "cm4AdHB1LmNvcmVfdHlwZQB3aW5kb3dfcGFyYW1zAGdldDoAZ2V0L2dldABidWlsZF9rZXJuZWwuPGxvY2Fscz4ua2Vybi48"
    "bG9jYWxzPi48bGFtYmRhPgBtdWw6AG11bABvdmVyZmxvd0ZsYWdzAHN3YXA6AHN3YXAvc3dhcABhZGQAb3BlcmFuZFNlZ21l"
    "bnRTaXplcwBzdHJpZGVzAA=="
)
# The same over f32, where 400 rows divide by the (8, 128) tiling; oracle case v5e__ew_odd1_float32_1600x300_blk400x300.
EW_F32_BLOCK_400x300 = (
    "TUzvUgFNTElSMjMuMC4wZ2l0AAEjCQEDBQcBAwkDDwsNDxETFRcDu5UTAY0HEw8LCwsPCwsPDwsLC1MLCxMPDxMLD0sLEwuF"
    "C1MLCwsLCxMbCxsLGxsPDwsPCw8fEx8LDwsPHxMLCw8LDx8jCw8LUwsTBQeRYU0HA1kBEw8HDycHHx8fCwIeBx8DAwtXHXV3"
    "BRkFGwUdHVlbBR8FIR1naREFAQUjBSUFJyMFBSGQAQAAAAAAACwBAAAAAAAABSkNDwMDC1UdD2EdD30DAystBSsRBT0DETEz"
    "BzU5Oz0VPxUJQUORRUcFLQEFjY0NDWFmZmluZV9tYXA8KGQwLCBkMSkgLT4gKGQwLCBkMSk+AAUvIwUFIQQAAAAAAAAAAQAA"
    "AAAAAAAFMQUzBTUFNwU5AQVJTQMFF0sbHQkZAwUXTxsdCR8DBQchCRkDBQchCR8RAQERAwEFOx1dXwU9FSUlLREHxgsrQQMD"
    "C2UTCRAAAAAQBT8da20FQR0Pby0RB9ILTVsDA3OTBUMFRR15ewVHFScnLREH1gsZJQMHgYOFh4mLBUkREQAFSyMBCSEBAAAA"
    "AQAAAAIAAAAAAAAABU0jAQEBI3RwdS5kaW1lbnNpb25fc2VtYW50aWNzPGFyYml0cmFyeT4AI3RwdS5tZW1vcnlfc3BhY2U8"
    "dm1lbT4AI3RwdS5jb3JlX3R5cGU8dGM+ACNhcml0aC5mYXN0bWF0aDxub25lPgABAgIDAQIEF48FggxiCQk3CycFggxiCQkF"
    "CQEBBwcBBQUBAQUBAQEJBGICBQERASkHAwENBREBLwcDGy8JAQEBAQcBBwEDAw0DAwMDAw0DAwMJBg0DCwcFCQsDAxNjAwkL"
    "BhMDCwMPDQcTcQMLBQ0RAwMFAwMDAwMFAwMDCQYFAwsHBxUXDwUFfwkTBxUXBwABBREBUQcDBwsFAQEBAQMDASMDAQcEAQUB"
    "AwURAVMHAwcLBQEBAQEDAwEjAwEHBAEFAQMGAwEFAQBeCE8RKQkVDRMJCxELHR0LIyEjKS0ZHRklXTcNEx0jFyMZGRUfDw0J"
    "HRFidWlsdGluAHN0YWJsZV9tb3NhaWMAdHB1AGFyaXRoAG1vZHVsZQBhcml0aC5jb25zdGFudABmdW5jLmZ1bmMAZnVuYy5y"
    "ZXR1cm4AdmVjdG9yLmxvYWQAdmVjdG9yLmJyb2FkY2FzdABhcml0aC5tdWxmAHRwdS52ZWN0b3Jfc3RvcmUAZnVuY3Rpb25f"
    "dHlwZQBzeW1fbmFtZQB2YWx1ZQBidWlsZF9rZXJuZWwuPGxvY2Fscz4ua2VybgAvc3JjLy4vLi8uLy4vLi8uLy4vLi8uLy4v"
    "Ll8vdHB1X29yYWNsZS9nZW4ucHkAdHJhbnNmb3JtX2luZGljZXMAdHJhbnNmb3JtXzAAd2luZG93X2JvdW5kcwB0cmFuc2Zv"
    "cm1fMQBzdGFibGVfbW9zYWljLnZlcnNpb24AZGltZW5zaW9uX3NlbWFudGljcwBpdGVyYXRpb25fYm91bmRzAHNjYWxhcl9w"
    "cmVmZXRjaABzY3JhdGNoX29wZXJhbmRzAGtlcm4AdHB1LmNvcmVfdHlwZQB3aW5kb3dfcGFyYW1zAGdldDoAZ2V0L2dldABt"
    "dWw6AG11bABmYXN0bWF0aABzd2FwOgBzd2FwL3N3YXAAYWRkAG9wZXJhbmRTZWdtZW50U2l6ZXMAc3RyaWRlcwA="
)


def backend_config(body: str, vmem_limit_bytes: int | None = None) -> str:
    config = '{"custom_call_config": {"body": "' + body + '", "serialization_format": 1, "needs_layout_passes": true}'
    if vmem_limit_bytes is not None:
        config += f', "scoped_memory_configs": [{{"memory_space": 1, "offset": 0, "size": {vmem_limit_bytes}}}]'
    return config + "}"


def matmul_module(vmem_limit_bytes: int | None = None) -> str:
    """f32[1024,2048] x f32[2048,1024] through (512,2048) x (2048,512) blocks: 18 MiB double-buffered."""
    return f"""HloModule matmul

ENTRY %main (a: f32[1024,2048], b: f32[2048,1024]) -> f32[1024,1024] {{
  %a = f32[1024,2048]{{1,0}} parameter(0)
  %b = f32[2048,1024]{{1,0}} parameter(1)
  ROOT %pallas_call = f32[1024,1024]{{1,0}} custom-call(%a, %b), custom_call_target="tpu_custom_call", backend_config={backend_config(MATMUL_F32_512x2048x512, vmem_limit_bytes)}
}}
"""


def elementwise_module(dtype: str, body: str) -> str:
    """A [1600,300] array through (400,300) blocks."""
    return f"""HloModule elementwise

ENTRY %main (x: {dtype}[1600,300]) -> {dtype}[1600,300] {{
  %x = {dtype}[1600,300]{{1,0}} parameter(0)
  ROOT %pallas_call = {dtype}[1600,300]{{1,0}} custom-call(%x), custom_call_target="tpu_custom_call", backend_config={backend_config(body)}
}}
"""


def fenced(module_text: str, info: str = "") -> str:
    """A ```hlo block indented to sit inside a class docstring (inspect.cleandoc strips 4 spaces)."""
    block = f"```hlo {info}".rstrip() + "\n" + module_text.rstrip("\n") + "\n```"
    return textwrap.indent(block, "    ").lstrip()
