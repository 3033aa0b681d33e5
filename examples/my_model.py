"""A world model wrapped for wcbench in about 20 lines: `wcbench run --model examples.my_model:PanZoomModel`.

This toy "model" fakes camera motion on the start image: yaw pans, pitch tilts, w/s zooms.
Replace the body of `step` with your own generator; keep the signatures (README, "Wrap your
own world model", lists the types of `image`, `info` and `actions`).
"""

import cv2
import numpy as np


class PanZoomModel:
    name, fps = "pan-zoom", 16

    def __init__(self, pixels_per_degree: float = 2.0):
        self.pixels_per_degree = pixels_per_degree

    def reset(self, image, prompt, seed, info):
        self.image, self.info, self.shift, self.zoom = image, info, np.zeros(2), 1.0
        return image  # frame 0 is the start image

    def step(self, actions):
        frames = []
        for action in actions:                      # one latent step = 4 frames
            for _ in range(4):
                self.shift += np.array([-action.yaw, action.pitch]) * self.info.steps.degrees * self.pixels_per_degree
                self.zoom *= 1.0 + 0.01 * action.forward
                h, w = self.image.shape[:2]
                M = cv2.getRotationMatrix2D((w / 2, h / 2), 0.0, self.zoom)
                M[:, 2] += self.shift
                frames.append(cv2.warpAffine(self.image, M, (w, h), borderMode=cv2.BORDER_REFLECT))
        return np.stack(frames)
