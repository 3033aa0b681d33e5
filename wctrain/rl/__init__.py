"""``wctrain train``: clip-level RL post-training, one part of the loop per module.

In the order of one training step (:func:`wctrain.rl.trainer.train`): ``episodes`` (and
``trajectories``: pose-JSON training trajectories), ``rollout`` (with ``exploration``),
``rewards`` (wcbench's scorers as rewards), ``advantages``, ``loss`` (with ``nft``, the pure
loss), ``policy`` (the EMA old policy), ``trainable`` (which weights train), ``curriculum``,
``schedule`` (the target clip, the optimiser steps), ``resume`` and ``watch``; ``trainer``
drives them.
"""
