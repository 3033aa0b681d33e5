"""What is scored: suites of cases (scene, prompt, action script, horizon, seed). The scene
packs that give each case its start image and world live in :mod:`wcbench.data.scenes`."""
