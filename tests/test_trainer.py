"""wctrain train: end to end on CPU, exact resume, 2 processes = 1 process on the same groups."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from wctrain.cli import load_config
from wctrain.models.tinywm import TinyWM
from wctrain.trainer import train


@pytest.fixture(scope="module")
def tiny_init(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("init") / "tinywm"
    TinyWM(block_out_channels=(16, 32, 32), cond_embed_dim=32, attention_heads=2).save_pretrained(path)
    return path


# The tiny model starts with a zero output layer, so its action embeddings get no gradient:
# these tests train every weight (the default trains the action embedding and its projection).
TRAIN_ALL = ["rl.trainable=null", "rl.lr=1e-4", "rl.shared_lr=1e-4"]


# this tiny model follows no candidate's actions (IF 0 everywhere), so IF alone (the default) gives
# r = 1/2 and rightly no update; tests that need the weights to move let VQ's spread in
VQ_SPREAD = "reward.lam=0.9"


def _cfg(run_dir, init, *extra):
    return load_config("train", [f"run_dir={run_dir}", f"init={init}", "rl.group_size=4", "rl.top_k=1",
                                 "rl.episode_clips=2", "eval.every=0", "checkpoint_every=1", *TRAIN_ALL, *extra])


def _weights(run_dir):
    return torch.load(Path(run_dir) / "checkpoint.pt", weights_only=False)["model"]


def test_train_runs_logs_and_exports(tiny_init, tmp_path):
    run = train(_cfg(tmp_path / "run", tiny_init, "rl.steps=2", VQ_SPREAD))
    rows = (run / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 2 and '"reward_if"' in rows[0] and '"clip_generations": 4' in rows[0]
    assert all(0.0 <= json.loads(row)["if_full_marks_share"] <= 1.0 for row in rows)
    assert (run / "final" / "config.json").exists()
    initial = TinyWM.from_pretrained(tiny_init).state_dict()
    assert any(not torch.equal(initial[k], v) for k, v in _weights(run).items())


def test_no_reward_spread_warns_so_and_not_that_v_old_is_wrong(tiny_init, tmp_path):
    """IF only (the default) on a model that follows nothing: r = 1/2 everywhere, the gradient is
    exactly 0 and the weights never move, so v_theta = v_old is right; the warning must name the
    missing spread, not blame v_old."""
    with pytest.warns(UserWarning) as record:
        run = train(_cfg(tmp_path / "run", tiny_init, "rl.steps=11", "checkpoint_every=100"))
    messages = [str(w.message) for w in record]
    assert any("no update for 10 steps" in m for m in messages)
    assert not any("v_old may be computed" in m for m in messages)
    rows = [json.loads(row) for row in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["grad_norm"] for row in rows] == [0.0] * 11 and {row["r_mean"] for row in rows} == {0.5}


def test_resume_continues_exactly(tiny_init, tmp_path):
    # with the label curriculum on, step 2's episodes depend on step 1's rollouts: resume must restore it
    focus = "rl.focus_candidates=3"
    straight = train(_cfg(tmp_path / "straight", tiny_init, "rl.steps=2", focus, VQ_SPREAD))
    resumed = tmp_path / "resumed"
    train(_cfg(resumed, tiny_init, "rl.steps=1", focus, VQ_SPREAD))  # a run killed after its first checkpoint
    train(_cfg(resumed, tiny_init, "rl.steps=2", focus, VQ_SPREAD))
    a, b = _weights(straight), _weights(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)
    initial = TinyWM.from_pretrained(tiny_init).state_dict()
    assert any(not torch.equal(initial[k], v) for k, v in a.items())  # the weights did move
    curriculum = [torch.load(run / "checkpoint.pt", weights_only=False)["label_accuracy"] for run in (straight, resumed)]
    assert (curriculum[0] != 0.5).any() and (curriculum[0] == curriculum[1]).all()
    def rows(run):
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                for line in (run / "metrics.jsonl").read_text().splitlines()]

    assert rows(resumed) == rows(straight)


def test_resume_with_other_trained_weights_names_the_checkpoint(tiny_init, tmp_path):
    run = tmp_path / "run"
    train(_cfg(run, tiny_init, "rl.steps=1"))
    before = (run / "checkpoint.pt").read_bytes()
    with pytest.raises(ValueError, match=r"checkpoint\.pt: cannot resume.*rl\.trainable"):
        train(_cfg(run, tiny_init, "rl.steps=2", "rl.trainable=[action_embedding]"))
    assert (run / "checkpoint.pt").read_bytes() == before  # nothing overwritten


@pytest.mark.slow
def test_two_processes_equal_one_on_the_same_groups(tiny_init, tmp_path):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        pytest.skip("accelerate CLI not installed")
    one = train(_cfg(tmp_path / "one", tiny_init, "rl.steps=1", "rl.groups_per_rank=2", "reward.std_mode=global",
                     "rl.focus_candidates=3", VQ_SPREAD))
    two = tmp_path / "two"
    proc = subprocess.run([accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "wctrain", "train",
                           f"run_dir={two}", f"init={tiny_init}", "rl.group_size=4", "rl.top_k=1", "rl.episode_clips=2",
                           "eval.every=0", "checkpoint_every=1", "rl.steps=1", "reward.std_mode=global", "rl.focus_candidates=3",
                           VQ_SPREAD, *TRAIN_ALL],
                          capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = _weights(one), _weights(two)
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-6, rtol=1e-5), key
    curriculum = [torch.load(run / "checkpoint.pt", weights_only=False)["label_accuracy"] for run in (one, two)]
    assert (curriculum[0] == curriculum[1]).all()  # both ranks' groups reach the running IF per label


def test_rollout_frames_are_what_wcbench_run_shows(tiny_init):
    """A clip-level candidate with the adapter's seed is the adapter's own clip, frame for frame."""
    from wcbench.actions import StepSizes, clip_step_ranges, intrinsics_from_fov, parse_script, script_trajectory
    from wcbench.scenes.synthetic import build_scene, render
    from wctrain.models.wcbench_adapter import TinyWMWorldModel, load_tinywm
    from wctrain.rollout import Episode, rollout_clip_level, rollout_sample_level

    model = load_tinywm(tiny_init)
    script = parse_script("w+left-3, d-4")
    poses = script_trajectory(script, StepSizes())
    image = render(build_scene(3, poses[:, :3, 3]), poses[0], intrinsics_from_fov(96, 96, 75.0), 96, 96)
    adapter = TinyWMWorldModel(model=model)
    frame0 = adapter.reset(image, "", 5)
    steps = script.step_actions()
    clip0 = adapter.step([steps[i - 1] for i in clip_step_ranges(script.num_steps)[0]])
    rollout = rollout_clip_level(model, Episode(image, script), 0, 1, model.default_sigmas(),
                                 torch.Generator().manual_seed(5))
    assert np.array_equal(rollout.views[0].frames[1:], clip0)
    assert np.array_equal(rollout.views[0].reference, frame0)
    sample = rollout_sample_level(model, Episode(image, script), 1, 3, model.default_sigmas(),
                                  torch.Generator().manual_seed(5))
    assert (rollout.clip_generations, sample.clip_generations) == (1, 6)
    assert sample.candidates.shape[0] == 3 and len(sample.views[0].frames) == 17


def test_if_reward_rises_on_a_fixed_training_case(tmp_path):
    """The shipped tinywm on one combined clip it follows badly (backward while turning left:
    IF 0.12 at first); a few NFT steps on that clip alone raise it (to about 0.9)."""
    run = train(load_config("train", [f"run_dir={tmp_path / 'fixed'}", "rl.steps=7", "rl.lr=2e-4", "rl.shared_lr=2e-4",
                                      "rl.trainable=null",
                                      "rl.episode_pool=1", "rl.episode_clips=1", "rl.combined_fraction=1.0",
                                      "rl.seed=6", "reward.lam=1.0", "eval.every=0", "checkpoint_every=100"]))
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    rewards = [row["reward_if"] for row in rows]
    assert all(row["reward_vq"] is None for row in rows)  # IF only: VQ carries no weight, is not scored
    assert rewards[0] < 0.5, rewards  # the case is one the model fails at first
    assert sum(rewards[-2:]) / 2 > rewards[0] + 0.3, rewards


def test_exploration_varies_candidates_only_inside_the_block(tiny_init):
    from wctrain.models.tinywm import TinyWMContext

    model = TinyWM.from_pretrained(tiny_init).eval()
    with torch.no_grad():  # a non-zero output layer, so the conditioning reaches the velocity
        model.conv_out.weight.normal_(std=0.05)
    x = torch.randn(1, 1, model.latent_channels, 32, 32).expand(3, -1, -1, -1, -1)
    ctx = TinyWMContext(history=torch.zeros(3, 1, model.latent_channels, 32, 32))
    actions, sigma = torch.zeros(3, 4, 4), torch.full((3,), 0.5)
    actions[..., 0], actions[..., 2] = 1, -1  # forward while turning left
    plain = model.velocity(x, sigma, ctx, actions)
    assert torch.allclose(plain[0], plain[1]) and torch.allclose(plain[1], plain[2])
    with model.explore(1.0, 3, torch.Generator().manual_seed(0)):
        explored = model.velocity(x, sigma, ctx, actions)
        with pytest.raises(ValueError, match="batch of 3"):
            model.velocity(x[:2], sigma[:2], TinyWMContext(history=ctx.history[:2]), actions[:2])
    assert not torch.allclose(explored[0], explored[1]) and not torch.allclose(explored[1], explored[2])
    assert torch.equal(model.velocity(x, sigma, ctx, actions), plain)  # the block leaves nothing behind
    # components: more or less of the label's own rotation and translation; none stays none
    with model.explore(1.0, 3, torch.Generator().manual_seed(0), mode="components"):
        explored = model.velocity(x, sigma, ctx, actions)
        still = model.velocity(x, sigma, ctx, torch.zeros(3, 4, 4))
    assert not torch.allclose(explored[0], explored[1])
    assert torch.equal(still[0], still[1]) and torch.equal(still[1], still[2])
    with pytest.raises(ValueError, match="exploration mode must be one of"):
        with model.explore(1.0, 3, torch.Generator(), mode="sideways"):
            pass


def _velocity_probe(tiny_init, batch: int):
    """The tiny model with a non-zero output layer (so actions change the velocity), and one
    noisy latent, its noise level and an empty context repeated ``batch`` times."""
    from wctrain.models.tinywm import TinyWMContext

    model = TinyWM.from_pretrained(tiny_init).eval()
    with torch.no_grad():
        model.conv_out.weight.normal_(std=0.05)
    x = torch.randn(1, 1, model.latent_channels, 32, 32).expand(batch, -1, -1, -1, -1)
    ctx = TinyWMContext(history=torch.zeros(batch, 1, model.latent_channels, 32, 32))
    return model, x, torch.full((batch,), 0.5), ctx


def test_parts_exploration_reads_frames_of_a_combined_label_as_one_of_its_parts(tiny_init):
    """At offset scale 0, a candidate under ``parts`` is exactly the model commanded, frame by
    frame, either the label or its translation or rotation alone; basic labels are left alone."""
    import itertools

    from wctrain.models.tinywm import TinyWMContext

    batch = 6
    model, x, sigma, ctx = _velocity_probe(tiny_init, batch)
    combined = torch.tensor([0.0, 1.0, -1.0, 0.0]).expand(batch, 4, 4)  # right while turning left
    basic = torch.tensor([1.0, 0.0, 0.0, 0.0]).expand(batch, 4, 4)  # forward
    with model.explore(0.0, batch, torch.Generator().manual_seed(3), mode="parts"):
        explored = model.velocity(x, sigma, ctx, combined)
        explored_basic = model.velocity(x, sigma, ctx, basic)
    assert torch.allclose(explored_basic, model.velocity(x, sigma, ctx, basic), atol=1e-6)
    readings = [combined[0, 0], torch.tensor([0.0, 1.0, 0.0, 0.0]), torch.tensor([0.0, 0.0, -1.0, 0.0])]
    options = {}
    for choice in itertools.product(range(3), repeat=4):
        actions = torch.stack([readings[c] for c in choice])[None]
        options[choice] = model.velocity(x[:1], sigma[:1], TinyWMContext(history=ctx.history[:1]), actions)[0]
    matched = [next(c for c, v in options.items() if torch.allclose(explored[b], v, atol=1e-5)) for b in range(batch)]
    assert any(choice != (0, 0, 0, 0) for choice in matched)  # some frames were read as a part


def test_part_labels_limit_the_parts_reading_to_the_labels_named(tiny_init):
    """With ``part_labels`` naming only other labels, a combined label's frames are read as the
    label itself (at offset scale 0 the candidate is the model commanded); naming it restores
    the part readings of the same draw."""
    from wcbench.actions import NUM_LABELS, Action

    batch = 6
    model, x, sigma, ctx = _velocity_probe(tiny_init, batch)
    combined = torch.tensor([0.0, 1.0, -1.0, 0.0]).expand(batch, 4, 4)  # right while turning left
    plain = model.velocity(x, sigma, ctx, combined)
    mask = torch.zeros(NUM_LABELS, dtype=torch.bool)
    mask[Action(right=-1, yaw=1).label] = True  # another strafe-yaw label, not this one
    with model.explore(0.0, batch, torch.Generator().manual_seed(3), mode="parts", part_labels=mask):
        assert torch.allclose(model.velocity(x, sigma, ctx, combined), plain, atol=1e-6)
    mask[Action(right=1, yaw=-1).label] = True
    with model.explore(0.0, batch, torch.Generator().manual_seed(3), mode="parts", part_labels=mask):
        assert not torch.allclose(model.velocity(x, sigma, ctx, combined), plain, atol=1e-4)
    with pytest.raises(ValueError, match="parts exploration mode only"):
        with model.explore(1.0, batch, torch.Generator(), mode="isotropic", part_labels=mask):
            pass


def test_rollout_exploration_gates_parts_by_the_running_accuracy():
    """``rl.parts_below`` names the labels whose running IF is below it; the offset factors
    come from ``rl.explore_focus``; a gate without the parts mode is refused at config time."""
    from wcbench.actions import NUM_LABELS, Action
    from wctrain.trainer import RLConfig, rollout_exploration

    failed, basic = Action(right=1, yaw=-1).label, Action(yaw=-1).label
    accuracy = np.full(NUM_LABELS, 0.9)
    accuracy[[failed, basic]] = 0.1
    exploration = rollout_exploration(RLConfig(explore_mode="parts", parts_below=0.3), accuracy)
    assert exploration.mode == "parts" and exploration.scale == 1.0
    assert exploration.part_labels.nonzero().flatten().tolist() == [failed]  # a basic label has no parts
    assert torch.allclose(exploration.label_scale[[failed, 0]], torch.tensor([1.4, 0.6], dtype=torch.float64))
    assert rollout_exploration(RLConfig(explore_mode="parts"), accuracy).part_labels is None
    with pytest.raises(ValueError, match="set rl.explore_mode=parts"):
        RLConfig(parts_below=0.3)


def test_boost_exploration_adds_more_of_the_labels_own_parts_never_less(tiny_init):
    """``boost`` = the isotropic offset (same draw) + non-negative multiples of the label's own
    rotation and translation directions in the table."""
    from wcbench.actions import Action

    model = TinyWM.from_pretrained(tiny_init).eval()
    table = model.action_embedding.weight.detach()
    label = Action(right=1, yaw=-1)
    labels = torch.full((3, 4), label.label)  # 3 candidates, 1 latent of 4 frames
    rotation = table[Action(yaw=-1).label] - table[Action().label]
    translation = table[Action(right=1).label] - table[Action().label]
    offsets = {}
    for mode in ("isotropic", "boost"):
        with model.explore(1.5, 3, torch.Generator().manual_seed(4), mode=mode):
            offsets[mode] = model._exploration_offsets(labels, 3, 1)
    extra = (offsets["boost"] - offsets["isotropic"])[:, 0]  # every frame gets the same here
    directions = torch.stack([rotation, translation], dim=1)  # (dim, 2)
    coefficients = torch.linalg.lstsq(directions, extra.T).solution.T  # (3, 2)
    assert torch.allclose(coefficients @ directions.T, extra, atol=1e-4)
    assert (coefficients >= -1e-5).all() and (coefficients > 0.05).any()


def test_label_scale_explores_each_label_by_its_own_factor(tiny_init):
    """``label_scale`` multiplies each frame's offset by its label's factor: a label at 0 is
    not explored at all, one at 2 twice as far as without it (same draw)."""
    from wcbench.actions import NUM_LABELS, Action

    model, x, sigma, ctx = _velocity_probe(tiny_init, 3)
    followed, failed = Action(forward=1), Action(right=1, yaw=1)
    scale = torch.ones(NUM_LABELS)
    scale[followed.label], scale[failed.label] = 0.0, 2.0
    forward = torch.tensor([1.0, 0.0, 0.0, 0.0]).expand(3, 4, 4)
    strafe_turn = torch.tensor([0.0, 1.0, 1.0, 0.0]).expand(3, 4, 4)
    with model.explore(1.0, 3, torch.Generator().manual_seed(5), label_scale=scale):
        still = model.velocity(x, sigma, ctx, forward)
        wide = model.velocity(x, sigma, ctx, strafe_turn)
    assert torch.allclose(still, model.velocity(x, sigma, ctx, forward), atol=1e-6)
    assert not torch.allclose(wide[0], wide[1])
    with model.explore(2.0, 3, torch.Generator().manual_seed(5)):  # the same draw, twice the offset
        assert torch.allclose(wide, model.velocity(x, sigma, ctx, strafe_turn), atol=1e-5)
    with pytest.raises(ValueError, match="one entry per label"):
        with model.explore(1.0, 3, torch.Generator(), label_scale=torch.ones(3)):
            pass


def test_exploring_names_a_model_whose_explore_takes_no_label_scale():
    """A third-party model with the older ``explore()`` signature gets an error that says
    which setting to change, not Python's TypeError from deep in the rollout."""
    from contextlib import nullcontext

    from wctrain.rollout import Exploration, _exploring

    class OlderModel:
        def explore(self, scale, batch, generator, mode="isotropic"):
            return nullcontext()

    generator = torch.Generator()
    with _exploring(OlderModel(), Exploration(1.0), 2, generator):  # no per-label arguments: runs
        pass
    with pytest.raises(ValueError, match=r"OlderModel\.explore\(\) takes no label_scale.*explore_focus=0"):
        _exploring(OlderModel(), Exploration(1.0, label_scale=torch.ones(3)), 2, generator)
    with pytest.raises(ValueError, match=r"OlderModel\.explore\(\) takes no part_labels.*parts_below=1"):
        _exploring(OlderModel(), Exploration(1.0, "parts", part_labels=torch.ones(3, dtype=torch.bool)), 2, generator)


def test_exploration_scales_widen_failed_labels_and_narrow_followed_ones():
    from wctrain.curriculum import exploration_scales

    scales = exploration_scales(np.array([0.0, 0.5, 1.0]), 0.5)
    assert np.allclose(scales, [1.5, 1.0, 0.5])
    assert np.allclose(exploration_scales(np.array([0.0, 1.0]), 0.0), 1.0)
    with pytest.raises(ValueError, match="exploration focus"):
        exploration_scales(np.array([0.5]), 1.0)


def test_select_trainable_freezes_the_rest_and_rejects_a_typo(tiny_init):
    from wctrain.trainer import select_trainable

    model = TinyWM.from_pretrained(tiny_init)
    assert select_trainable(model, ["action_embedding"]) == ["action_embedding.weight"]
    assert not any(p.requires_grad for n, p in model.named_parameters() if not n.startswith("action_embedding"))
    assert len(select_trainable(model, None)) == len(list(model.parameters()))
    with pytest.raises(ValueError, match="action_embeding"):
        select_trainable(model, ["action_embeding"])


def test_select_trainable_names_a_module_inside_every_block(tiny_init):
    """``cond_emb_proj`` (the FiLM projection) sits in every block, not at the top level."""
    from wctrain.trainer import names_module, select_trainable

    model = TinyWM.from_pretrained(tiny_init)
    trained = select_trainable(model, ["action_proj", "cond_emb_proj"])
    film = [n for n, _ in model.named_parameters() if ".cond_emb_proj." in n]
    assert len(film) >= 4 and set(film) <= set(trained)
    assert set(trained) - set(film) == {n for n, _ in model.action_proj.named_parameters(prefix="action_proj")}
    assert not model.action_embedding.weight.requires_grad
    # whole path components only: no match on a substring of a name
    assert not names_module("cond_emb_projection.weight", "cond_emb_proj")
    assert not names_module("xaction_proj.0.weight", "action_proj")
    assert names_module("down_blocks.0.cond_emb_proj.weight", "down_blocks.0")


def test_optimizer_groups_give_the_table_and_the_shared_weights_their_own_rates(tiny_init):
    from wctrain.trainer import optimizer_groups, select_trainable

    model = TinyWM.from_pretrained(tiny_init)
    select_trainable(model, ["action_embedding", "action_proj"])
    table, shared = optimizer_groups(model, 1e-2, 1e-3)
    assert table["lr"] == 1e-2 and [p.shape for p in table["params"]] == [model.action_embedding.weight.shape]
    assert shared["lr"] == 1e-3 and {id(p) for p in shared["params"]} == {id(p) for p in model.action_proj.parameters()}
    select_trainable(model, ["action_embedding"])
    assert [g["lr"] for g in optimizer_groups(model, 1e-2, 1e-3)] == [1e-2]  # no empty group


def test_per_latent_credit_reaches_only_the_latents_own_action(tiny_init):
    """With r per latent, a latent at r = 1/2 moves nothing: at v_theta = v_old the embedding row
    of an action only that latent commands gets no gradient, while a clip-level r moves it."""
    from wcbench.actions import Action
    from wctrain.models.base import actions_to_tensor
    from wctrain.policy import build_frozen_copy
    from wctrain.rollout import GroupRollout
    from wctrain.trainer import RLConfig, group_loss, select_trainable

    torch.manual_seed(0)
    model = TinyWM.from_pretrained(tiny_init)
    with torch.no_grad():  # a non-zero output layer, so the action embeddings get gradients
        model.conv_out.weight.normal_(std=0.05)
    select_trainable(model, ["action_embedding"])
    old = build_frozen_copy(model)
    first, second = Action(forward=1, yaw=-1), Action(right=1, yaw=1)
    actions = actions_to_tensor([first, second])[None].expand(3, -1, -1)
    latents = torch.randn(3, 2, model.latent_channels, 32, 32)
    rollout = GroupRollout(0, torch.randn(3, 1, model.latent_channels, 32, 32), latents, actions, [], 3)
    cfg, sigmas = RLConfig(timestep_fraction=1.0), model.default_sigmas()

    def row_grads(r):
        model.zero_grad()
        loss, deviation = group_loss(model, old, None, rollout, r, torch.arange(3), sigmas,
                                     torch.Generator().manual_seed(0), cfg)
        loss.backward()
        assert deviation == 0.0
        grad = model.action_embedding.weight.grad
        return grad[first.label].abs().sum().item(), grad[second.label].abs().sum().item()

    per_latent = row_grads(torch.tensor([[1.0, 0.5], [0.0, 0.5], [1.0, 0.5]]))
    assert per_latent[0] > 0 and per_latent[1] == 0.0
    per_clip = row_grads(torch.tensor([1.0, 0.0, 1.0]))
    assert per_clip[0] > 0 and per_clip[1] > 0


def test_segment_steps_shape_training_scripts_and_settings_are_checked():
    from wcbench.suite import load_suite
    from wctrain.trainer import RewardConfig, RLConfig, TrainerConfig, sample_episode

    suite = load_suite("wc-mini")
    for steps, longest in (((1, 1), 1), ((2, 6), 6)):
        cfg = TrainerConfig(rl=RLConfig(segment_steps=steps, combined_fraction=1.0, focus_candidates=1))
        for draw in range(5):
            segments = sample_episode(cfg, suite, draw, 0, set()).script.segments
            assert max(s.count for s in segments) <= longest
            if steps == (1, 1):  # a new action every latent step
                assert all(s.count == 1 for s in segments) and len(segments) == 15
    with pytest.raises(ValueError, match="rl.segment_steps"):
        RLConfig(segment_steps=(0, 2))
    with pytest.raises(ValueError, match="reward.credit"):
        RewardConfig(credit="frame")


def test_train_yaml_lists_every_setting_with_the_dataclass_default():
    """Every field of TrainerConfig is in wctrain/conf/train.yaml with the same default, so each
    is documented there and overridable as key=value (hydra refuses keys the YAML lacks)."""
    import dataclasses

    from omegaconf import OmegaConf

    from wctrain.trainer import TrainerConfig

    def flat(node, prefix=""):
        items = dataclasses.asdict(node).items() if dataclasses.is_dataclass(node) else node.items()
        out = {}
        for key, value in items:
            if isinstance(value, dict):
                out.update(flat(value, f"{prefix}{key}."))
            else:
                out[prefix + key] = list(value) if isinstance(value, tuple) else value
        return out

    yaml = flat(OmegaConf.to_container(load_config("train", []), resolve=True))
    assert yaml == flat(TrainerConfig())


def test_vq_is_scored_only_where_it_carries_weight():
    """IF is always scored (the curriculum reads it); VQ only when lam < 1, since at weight 0
    its advantage term is exactly 0 (the weights trained are the same bit for bit)."""
    from wcbench.scoring.case import Scorers
    from wctrain.trainer import RewardConfig, scored_rewards

    scorers = Scorers(None, None)
    for lam, names in ((1.0, {"if": 1.0}), (0.9, {"if": 0.9, "vq": 0.1}), (0.0, {"if": 0.0, "vq": 1.0})):
        rewards, weights = scored_rewards(RewardConfig(lam=lam), scorers, 60.0)
        assert [reward.name for reward in rewards] == list(names) and weights == pytest.approx(names)
