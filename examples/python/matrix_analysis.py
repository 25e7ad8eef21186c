"""Matrices as DataFrames: which models of the zoo gain most from CPUs beyond the
proportional share, and how a model's throughput grows with CPUs at full memory.

    python examples/python/matrix_analysis.py
"""

import polars as pl

import jobprofiler as jp

zoo = jp.load("matrices/zoo")
print(f"{len(zoo)} matrices, {zoo.cells.height} cells")

# The best-case demand per model, most CPU-hungry first.
demand = (
    zoo.cells.group_by("job_model")
    .agg(
        pl.col("demand_cpus_per_gpu").first(),
        pl.col("demand_mem_gb_per_gpu").first(),
        pl.col("demand_speedup_over_proportional").first().alias("speedup"),
    )
    .sort("speedup", descending=True)
)
print(demand)

# ResNet-18's throughput against CPUs, at the largest memory measured.
r18 = zoo.cells.filter(pl.col("job_model") == "resnet18")
top = r18.filter(pl.col("memory_bytes") == r18["memory_bytes"].max()).sort("cpu")
print(top.select("cpu", "samples_per_s"))
assert top["samples_per_s"].is_sorted(), "more CPUs never slow a zoo model down"
