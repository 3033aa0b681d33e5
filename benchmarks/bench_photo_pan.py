"""`wcbench score` of one textured video from a real photo: a 381-frame 480x832 mp4 of a camera
turning right and left, 0.42 degrees a frame, in front of a KITTI street frame (../shared/realvid):
each frame is the photo warped by the turn's homography K R K^-1 at 75 degrees of field of view,
what a camera turning about its centre sees. Timed from process start to report against its
playback time at 24 frames/s, with the labels it reads.

    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.bench_photo_pan            # best of 3
    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.bench_photo_pan --repeats 1

Figures and the command are in docs/runs.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path

import cv2
import numpy as np

from benchmarks.bench_quality import PLAYBACK_FPS, REALVID, load_note, time_score
from wcbench.core.actions import parse_script
from wcbench.core.camera import intrinsics_from_fov, rot_y

PHOTO = REALVID / "kitti00-straight" / "00000.png"
SCRIPT = "right-16, left-16, right-16, left-16, right-16, left-15"  # 95 latent steps: 381 frames
WIDTH, HEIGHT, FOV_DEG, DEG_PER_FRAME = 832, 480, 75.0, 0.42


def write_pan(path: Path, photo: Path) -> int:
    """Turn a WIDTH x HEIGHT camera in front of ``photo`` as SCRIPT commands (yaw right: it looks
    further right), centred on the photo; write an mp4 and return its frame count."""
    image = cv2.imread(str(photo))
    if image is None:
        raise SystemExit(f"{photo}: cannot read the photo (is ../shared/realvid there?)")
    scale = 1.25 * HEIGHT / image.shape[0]  # margin above and below for the turn's perspective
    image = cv2.resize(image, (round(image.shape[1] * scale), round(image.shape[0] * scale)),
                       interpolation=cv2.INTER_CUBIC)
    k_out = intrinsics_from_fov(WIDTH, HEIGHT, FOV_DEG)
    k_src = k_out.copy()  # the same focal length, centred on the photo
    k_src[:2, 2] = image.shape[1] / 2, image.shape[0] / 2
    yaws = [0.0]
    for action in parse_script(SCRIPT).frame_actions():
        yaws.append(yaws[-1] + DEG_PER_FRAME * action.yaw)
    middle = (max(yaws) + min(yaws)) / 2
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), PLAYBACK_FPS, (WIDTH, HEIGHT))
    for yaw in yaws:
        to_source = k_src @ rot_y(yaw - middle) @ np.linalg.inv(k_out)  # an output pixel's ray, turned, in the photo
        flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
        writer.write(cv2.warpPerspective(image, to_source, (WIDTH, HEIGHT), flags=flags))
    writer.release()
    return len(yaws)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photo", type=Path, default=PHOTO)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        frames = write_pan(tmp / "pan.mp4", args.photo)
        with (tmp / "manifest.csv").open("w", newline="") as handle:
            csv.writer(handle).writerows([["id", "video", "actions", "fov_deg"], ["pan", "pan.mp4", SCRIPT, FOV_DEG]])
        runs = [time_score(tmp / "manifest.csv", tmp / f"out-{k}") for k in range(args.repeats)]
        case = json.loads((tmp / "out-0" / "results.json").read_text())["cases"][0]
    playback = frames / PLAYBACK_FPS
    wall, cpu, others = min(runs)
    print(f"{frames} frames {WIDTH}x{HEIGHT} turning before {args.photo.name}, mp4; playback {playback:.1f} s "
          f"{load_note()}")
    print(f"wcbench score: best wall {wall:.1f} s of {len(runs)} ({', '.join(f'{r[0]:.1f}' for r in runs)}) = "
          f"{wall / playback:.2f}x playback time, start-up included; CPU {cpu:.1f} s, others' CPU {others:.1f} s")
    print(f"IF {case['if_acc']:.3f} (translation {case['if_trans_acc']:.3f}, rotation {case['if_rot_acc']:.3f})")


if __name__ == "__main__":
    main()
