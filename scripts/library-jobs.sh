# The jobs of this machine kind's predictor library, sourced by scripts/record-library.sh and
# scripts/evaluate-library.sh: input pipelines, the deploy's jobs (one a real PyTorch loop) and
# the pipeline's variants, each swept at seven CPU levels from 0.25 to 2 cores.
# shellcheck shell=bash disable=SC2034
library_levels=0.25,0.5,0.75,1,1.25,1.5,2
library_specs=(
    workloads/input-pipeline.toml
    workloads/deploy/jobs/light.toml
    workloads/deploy/jobs/decode.toml
    workloads/deploy/jobs/cache.toml
    workloads/library/crop160.toml
    workloads/library/accel5.toml
    workloads/library/one-worker.toml
    workloads/deploy/jobs/torch.toml
)
# A spec's job name.
name_of() { sed -n 's/^name = "\(.*\)"/\1/p' "$1" | head -1; }
