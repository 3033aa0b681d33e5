"""Scene packs: where a case's start image (and, for synthetic scenes, its world) comes from."""

from wcbench.data.scenes.packs import CaseWorld, case_world, load_image_folder_pack

__all__ = ["CaseWorld", "case_world", "load_image_folder_pack"]
