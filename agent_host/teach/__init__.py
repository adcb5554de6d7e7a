"""Teaching a small model the harness from the suite's own reference solutions (docs/teach.md):
the dataset and its split, LoRA training on the CPU, and merging the adapter into the base."""
