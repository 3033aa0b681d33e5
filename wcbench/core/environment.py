"""What a result was computed with: package versions and hardware, for results.json and for
reading a frames/s figure (which means nothing without the machine it was measured on)."""

from __future__ import annotations

import datetime as dt
import os
import platform
import resource
import sys
from functools import lru_cache
from importlib import metadata

# The packages whose versions can move a score or a timing.
PACKAGES = ("worldcompass-bench", "numpy", "scipy", "opencv-python-headless", "opencv-python", "torch",
            "pandas", "hydra-core", "accelerate", "diffusers")


def package_versions() -> dict[str, str]:
    """Installed versions of :data:`PACKAGES` (those not installed are left out) and Python's."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def gpu_name() -> str | None:
    """The first CUDA device's name when torch is already imported and sees one; else None
    (wcbench does not import torch just to ask)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return str(torch.cuda.get_device_name(0))


def this_process_uses_a_gpu(torch) -> bool:
    """Whether this process runs on a GPU: CUDA is there and this process's local rank
    (``LOCAL_RANK``, which ``accelerate launch`` sets) names a visible device. More processes than
    GPUs is an error rather than a crash deep in CUDA ("invalid device ordinal")."""
    if not torch.cuda.is_available():
        return False
    rank, count = int(os.environ.get("LOCAL_RANK", "0")), torch.cuda.device_count()
    if rank >= count:
        raise RuntimeError(f"process {rank} of {os.environ.get('LOCAL_WORLD_SIZE', '?')} on this machine has no GPU: "
                           f"{count} visible. Launch one process per GPU (--num_processes {count}), or run every "
                           f"process on the CPU (the setting device=cpu)")
    return True


def cores() -> int:
    """CPU cores this process may run on (the affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def hardware() -> dict:
    """CPU model, usable cores and GPU (None without one)."""
    return {"cpu": cpu_model(), "cores": cores(), "gpu": gpu_name()}


def hardware_label(info: dict) -> str:
    """One line for tables: the GPU when there is one, else the CPU and its cores."""
    return info["gpu"] or f"{info['cpu']} ({info['cores']} cores)"


def peak_memory_mb() -> float:
    """This process's peak memory in MB: resident set size, or the GPU's allocations if larger."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            peak = max(peak, torch.cuda.max_memory_allocated() / 2**20)
    return peak


def timestamp() -> str:
    """Now, UTC, ISO 8601 to the second."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def environment() -> dict:
    """The block results.json records: versions, hardware, platform and the time."""
    return {"packages": package_versions(), "hardware": hardware(), "platform": platform.platform(),
            "created": timestamp()}
