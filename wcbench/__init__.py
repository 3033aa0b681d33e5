"""wcbench: does a video world model's camera do what the actions said, and does it still look good?"""

__version__ = "0.1.0"
