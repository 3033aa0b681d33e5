"""What every stage shares: the action vocabulary and its native encodings, video and JSON
files, the registry, settings, the environment a result records, and call time limits."""
