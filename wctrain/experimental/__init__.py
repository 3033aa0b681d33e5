"""The paper's ablations: selectable by the same settings as the default, kept off its path.

- ``rl.rollout=sample`` (:mod:`wctrain.experimental.sample_rollout`): G whole videos per group,
  each with its own prefix, against WorldCompass's clip-level rollout (the default).
- ``rl.loss=rwr`` (:mod:`wctrain.experimental.rwr`): reward-weighted regression, against the
  DiffusionNFT loss (the default).

The trainer dispatches to them by name (``wctrain.rl.trainer.ROLLOUTS``, ``wctrain.rl.loss``);
nothing on the default path depends on them.
"""
