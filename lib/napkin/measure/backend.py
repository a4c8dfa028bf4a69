"""Which backend llama.cpp computes on (CPU, CUDA, Metal, ROCm, Vulkan ...) and on what device.

Read from llama.cpp itself, never assumed from the platform:

- in-process, from the ggml device list of the ``llama-cpp-python`` build
  (``ggml_backend_dev_*``, the same list ``llama-bench`` reports from);
- from a ``llama-bench`` binary, from its JSON (``backends``, ``gpu_info``,
  ``n_gpu_layers``) or, before any run, from ``llama-bench --list-devices``.

The backend decides the ceiling: on a GPU, the device's memory bandwidth; on
the CPU, the memory probe (:mod:`napkin.measure.bandwidth`).
"""

from __future__ import annotations

import ctypes
import platform
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Backend", "backend_name", "clean_description", "DEVICE_TYPES", "from_binding",
           "from_devices", "from_list_devices", "from_llama_bench_row", "from_system_info",
           "ggml_devices", "GPU_BACKENDS", "gpu_build_hint", "GPU_BUILDS", "pinned_binding",
           "unused_gpu"]

#: ggml's backend registry names -> the backend's usual name. The HIP build registers
#: as "ROCm"; Metal registers as "MTL" in recent llama.cpp and "Metal" before.
GPU_BACKENDS = {"CUDA": "CUDA", "ROCm": "ROCm", "HIP": "ROCm", "MUSA": "MUSA", "MTL": "Metal",
                "Metal": "Metal", "Vulkan": "Vulkan", "SYCL": "SYCL", "CANN": "CANN",
                "OpenCL": "OpenCL", "WebGPU": "WebGPU"}

#: ggml_backend_dev_type of the pinned llama.cpp: CPU, GPU, IGPU, ACCEL, META.
DEVICE_TYPES = ("CPU", "GPU", "IGPU", "ACCEL", "META")

#: How to build llama-cpp-python for each GPU backend: ``pip install`` with these CMAKE_ARGS
#: and no cached wheel (pip's cached one is the CPU build). Metal is already the default on
#: Apple silicon; ROCm also needs HIP's compiler named (README, "A GPU build").
GPU_BUILDS = {"CUDA": "-DGGML_CUDA=on", "Metal": "-DGGML_METAL=on", "ROCm": "-DGGML_HIP=on",
              "Vulkan": "-DGGML_VULKAN=on"}


def backend_name(registry: str) -> str:
    """ggml's registry name (``"CUDA"``, ``"MTL"``, ``"ROCm"``) as the backend's name; CPU-side
    registries (CPU, BLAS, RPC ...) are "CPU"."""
    return GPU_BACKENDS.get(registry.strip(), "CPU")


@dataclass(frozen=True)
class Backend:
    """The backend llama.cpp computes on, its GPU devices (none on the CPU) and the evidence."""

    name: str
    devices: tuple[str, ...] = ()
    evidence: str = ""

    @property
    def gpu(self) -> bool:
        return self.name != "CPU"

    def describe(self) -> str:
        """``CUDA on NVIDIA GeForce RTX 4090`` or ``CPU``."""
        return f"{self.name} on {', '.join(self.devices)}" if self.gpu else "CPU"


def from_devices(devices: list[tuple[str, str, str]], evidence: str) -> Backend:
    """The backend of a list of ``(registry, description, type)`` ggml devices: the first GPU
    backend with a GPU (or integrated GPU) device, all of its devices; else the CPU."""
    gpus = [(reg, desc) for reg, desc, kind in devices
            if kind in ("GPU", "IGPU") and backend_name(reg) != "CPU"]
    if not gpus:
        return Backend("CPU", (), evidence)
    name = backend_name(gpus[0][0])
    return Backend(name, tuple(clean_description(d) for reg, d in gpus
                               if backend_name(reg) == name), evidence)


def clean_description(text: str) -> str:
    """A device description without llama.cpp's virtual-device suffix (``(dev p0/v1)``)."""
    return re.sub(r"\s*\(dev p\d+/v\d+\)$", "", text.strip())


# -- in-process: the binding's ggml device list -----------------------------------------------

def ggml_devices(llama_cpp) -> list[tuple[str, str, str]]:
    """``(registry, description, type)`` of every device the binding's ggml registered."""
    from llama_cpp import _ggml

    lib = _ggml.libggml
    p = ctypes.c_void_p
    for fn, res, args in (("ggml_backend_dev_count", ctypes.c_size_t, []),
                          ("ggml_backend_dev_get", p, [ctypes.c_size_t]),
                          ("ggml_backend_dev_description", ctypes.c_char_p, [p]),
                          ("ggml_backend_dev_type", ctypes.c_int, [p]),
                          ("ggml_backend_dev_backend_reg", p, [p]),
                          ("ggml_backend_reg_name", ctypes.c_char_p, [p])):
        getattr(lib, fn).restype, getattr(lib, fn).argtypes = res, args
    out = []
    for i in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(i)
        kind = lib.ggml_backend_dev_type(dev)
        out.append((lib.ggml_backend_reg_name(lib.ggml_backend_dev_backend_reg(dev)).decode(),
                    lib.ggml_backend_dev_description(dev).decode("utf-8", "replace"),
                    DEVICE_TYPES[kind] if 0 <= kind < len(DEVICE_TYPES) else str(kind)))
    return out


def from_binding(llama_cpp) -> Backend:
    """The backend the in-process runner offloads to (every layer, when there is a GPU)."""
    try:
        devices = ggml_devices(llama_cpp)
    except (AttributeError, ImportError, OSError):  # a binding without ggml's device API
        return from_system_info(llama_cpp)
    listed = "; ".join(f"{reg}: {desc}" if kind == reg else f"{reg} {kind}: {desc}"
                       for reg, desc, kind in devices) or "none"
    return from_devices(devices, f"llama-cpp-python's ggml devices ({listed})")


def from_system_info(llama_cpp) -> Backend:
    """Older bindings: the GPU backend named in llama.cpp's system info, device unnamed."""
    system = llama_cpp.llama_print_system_info().decode()
    evidence = f"llama.cpp system info ({system.strip()[:120]})"
    if not llama_cpp.llama_supports_gpu_offload():
        return Backend("CPU", (), evidence)
    found = next((reg for reg in GPU_BACKENDS if re.search(rf"\b{reg}\b", system)), "GPU")
    return Backend(GPU_BACKENDS.get(found, found), (), evidence)


# -- a llama-bench binary ---------------------------------------------------------------------

def from_llama_bench_row(row: dict) -> Backend:
    """The backend of one llama-bench JSON record: its ``backends`` and ``gpu_info``, and
    whether layers were offloaded at all (``n_gpu_layers`` 0 runs on the CPU)."""
    registries = [b for b in str(row.get("backends", "CPU")).split(",") if b.strip()]
    gpu_names = [backend_name(b) for b in registries if backend_name(b) != "CPU"]
    devices = tuple(clean_description(d) for d in str(row.get("gpu_info", "")).split(", ")
                    if d.strip())
    evidence = (f"llama-bench JSON: backends={row.get('backends', '?')!r}, "
                f"gpu_info={row.get('gpu_info', '')!r}, n_gpu_layers={row.get('n_gpu_layers')}")
    if not gpu_names or not devices or row.get("n_gpu_layers") == 0:
        return Backend("CPU", (), evidence)
    return Backend(gpu_names[0], devices, evidence)


def from_list_devices(text: str) -> Backend:
    """The output of ``llama-bench --list-devices``: lines ``  CUDA0: NVIDIA ... (24080 MiB,
    23000 MiB free)`` for every non-CPU device, or ``(none)``."""
    devices = []
    for line in text.splitlines():
        m = re.match(r"^\s+([A-Za-z]+)\d*: (.+?) \(\d+ MiB, \d+ MiB free\)\s*$", line)
        if m:
            devices.append((m.group(1), m.group(2), "GPU"))
    return from_devices(devices, f"llama-bench --list-devices: {len(devices)} non-CPU device(s)")


# -- a GPU the binding does not use -----------------------------------------------------------

def unused_gpu() -> str | None:
    """The GPU kind this machine seems to have (CUDA, ROCm, Metal), by its driver tools, so a
    CPU-only run can say how to use it; None when there is no sign of one."""
    if shutil.which("nvidia-smi"):
        return "CUDA"
    if shutil.which("rocm-smi") or shutil.which("amd-smi") or Path("/dev/kfd").exists():
        return "ROCm"
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        return "Metal"
    return None


def pinned_binding() -> str:
    """The llama-cpp-python version the book pins (requirements.txt of this checkout), else
    the installed one."""
    pins = Path(__file__).resolve().parents[3] / "requirements.txt"
    if pins.is_file():
        m = re.search(r"^llama[-_]cpp[-_]python==(\S+)", pins.read_text(), re.M | re.I)
        if m:
            return m.group(1)
    from importlib.metadata import version

    return version("llama_cpp_python")


def gpu_build_hint(kind: str, version: str) -> str:
    """The one command that rebuilds the binding for ``kind`` (see the README)."""
    flag = GPU_BUILDS[kind]
    return (f'CMAKE_ARGS="{flag}" pip install --force-reinstall --no-deps --no-cache-dir '
            f'--no-binary llama-cpp-python llama-cpp-python=={version}')
