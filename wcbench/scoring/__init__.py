"""The scorers shared by the benchmark and the trainer: following (IF) and quality (VQ)."""
