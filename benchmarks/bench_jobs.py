"""Throughput of `wcbench score --jobs N` against `--jobs 1`: the same manifest of generated
videos scored by the command line in a fresh process per setting, with its wall time, the peak
memory of its process tree (sampled) and of its largest process (``ru_maxrss``), its CPU
seconds (the work, whatever else runs on the machine), and a check that every setting wrote
the same records (timing aside).

    .venv/bin/python -m benchmarks.bench_jobs                                  # 24 videos, 125 frames, 832x480
    .venv/bin/python -m benchmarks.bench_jobs --videos 8 --jobs 1 2 --repeat 2   # quicker; alternating, paired

Each video is a blurred random texture (its own seed) panned back and forth with moves
between (mp4, as most generators write; see bench_memory.py). Settings alternate within each
repeat, so that a machine shared with other work slows them alike; the ratio is per repeat.
Figures and the command are in docs/runs.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from benchmarks.bench_memory import make_script, write_video

ROOT = Path(__file__).resolve().parents[1]


def write_manifest(folder: Path, videos: int, frames: int, width: int, height: int) -> Path:
    rows = []
    for index in range(videos):
        path = folder / f"v{index:03d}.mp4"
        write_video(path, frames, width, height, seed=index, fps=24)
        rows.append({"id": f"v{index:03d}", "video": path.name, "actions": make_script(frames)})
    manifest = folder / "manifest.csv"
    with manifest.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return manifest


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:  # exited between the listing and the reading
            pass
    return total


def score(manifest: Path, out: Path, jobs: int) -> tuple[float, float, float, float]:
    """Seconds from the start of `wcbench score --jobs N` to its last record (scoring, with the
    process start; what --jobs speeds up) and to its exit (the report after it takes the same
    time either way), the CPU seconds of its process tree (user + system: what the work costs,
    whatever else the machine runs), and the peak summed RSS of the tree in MB, sampled every
    0.1 s."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [sys.executable, "-m", "wcbench", "score", "--manifest", str(manifest), "--out", str(out),
               "--jobs", str(jobs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    started, started_wall = time.perf_counter(), time.time()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, process = [0], psutil.Process(child.pid)

    def sample() -> None:
        while child.poll() is None:
            try:
                peak[0] = max(peak[0], _tree_rss(process))
            except psutil.Error:
                return
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = child.communicate()
    seconds = time.perf_counter() - started
    sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"wcbench score --jobs {jobs} failed ({child.returncode}):\n{stderr.decode()[-2000:]}")
    last_record = max(path.stat().st_mtime for path in (out / "cases").glob("[!.]*.json")) - started_wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return last_record, seconds, cpu, peak[0] / 2**20


def records(out: Path) -> dict[str, list]:
    """Each record's stored fields in order, less its timing."""
    found = {}
    for path in sorted((out / "cases").glob("[!.]*.json")):
        record = json.loads(path.read_text())
        record.pop("timing", None)
        found[path.name] = list(record.items())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--videos", type=int, default=24)
    parser.add_argument("--frames", type=int, default=125, help="4L-3 frames per video")
    parser.add_argument("--size", type=int, nargs=2, default=(832, 480), metavar=("W", "H"))
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="settings; the first is the base")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_jobs_") as tmp:
        folder = Path(tmp)
        manifest = write_manifest(folder, args.videos, args.frames, *args.size)
        print(f"{args.videos} videos x {args.frames} frames at {args.size[0]}x{args.size[1]}, "
              f"{len(os.sched_getaffinity(0))} cores available, load average {os.getloadavg()[0]:.1f}", flush=True)
        reference = None
        for repeat in range(args.repeat):
            base = None
            for jobs in args.jobs:
                out = folder / f"out-{repeat}-{jobs}"
                seconds, total, cpu, tree_mb = score(manifest, out, jobs)
                base = base or seconds
                found = records(out)
                reference = reference or found
                same = found == reference and len(found) == args.videos
                print(f"repeat {repeat}  --jobs {jobs}: last record at {seconds:6.1f} s  "
                      f"{args.videos / seconds:5.2f} videos/s  {base / seconds:4.2f}x --jobs {args.jobs[0]}  "
                      f"(exit with report {total:5.1f} s)  CPU {cpu:6.1f} s ({cpu / total:4.2f} cores busy)  "
                      f"peak RSS of the process tree {tree_mb:5.0f} MB  "
                      f"records identical: {same}", flush=True)
                if not same:
                    raise SystemExit("records differ between settings")
        largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"largest single process: {largest:.0f} MB (ru_maxrss); load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
