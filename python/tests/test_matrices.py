import io
import json
import subprocess

import polars as pl
import pytest

import jobprofiler as jp

ZOO = "matrices/zoo"


def test_the_zoo_reads_as_the_clis_csv_row_for_row(profiler_bin):
    zoo = jp.load(ZOO)
    files = zoo.paths
    cli = subprocess.run(
        [str(profiler_bin), "export", *files, "--format", "csv"],
        check=True,
        capture_output=True,
    ).stdout
    expected = pl.read_csv(io.BytesIO(cli), infer_schema_length=None)
    # The CSV has no types: compare values, column by column, in the same order.
    assert zoo.cells.columns == expected.columns
    assert zoo.cells.height == expected.height == 540
    for name in expected.columns:
        got, want = zoo.cells[name], expected[name]
        if want.dtype.is_numeric() and got.dtype.is_numeric():
            assert (got.cast(pl.Float64) - want.cast(pl.Float64)).abs().max() in (None, 0.0), name
        else:
            assert got.cast(pl.String).fill_null("").to_list() == want.cast(pl.String).fill_null("").to_list(), name


def test_headers_demands_and_pandas():
    zoo = jp.load(ZOO)
    assert len(zoo) == len(zoo.headers) == len(zoo.demands) == 12
    models = [h["job"]["model"] for h in zoo.headers]
    assert "resnet18" in models
    r18 = zoo.demands[models.index("resnet18")]
    assert r18["cpus_per_gpu"] > 0 and r18["speedup_over_proportional"] >= 1.0
    assert zoo.to_pandas().shape == zoo.cells.shape


def test_the_demand_follows_the_export_options():
    wide = jp.load(f"{ZOO}/resnet18.matrix.jsonl", eps=0.2)
    tight = jp.load(f"{ZOO}/resnet18.matrix.jsonl", eps=0.0)
    assert wide.demands[0]["cpus_per_gpu"] <= tight.demands[0]["cpus_per_gpu"]


def test_exports_write_what_the_cli_writes(tmp_path, profiler_bin):
    zoo = jp.load(ZOO)
    written = zoo.export("synergy", out=tmp_path / "py")
    assert written and all(p.endswith(".py") for p in written)
    subprocess.run(
        [str(profiler_bin), "export", *zoo.paths, "--format", "synergy", "-o", str(tmp_path / "cli")],
        check=True,
        capture_output=True,
    )
    for path in written:
        name = path.rsplit("/", 1)[-1]
        assert open(path).read() == (tmp_path / "cli" / name).read_text(), name
    text = jp.export(f"{ZOO}/resnet18.matrix.jsonl", format="kubernetes")
    assert "resources" in text


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(jp.ProfilerError, match="no \\*.matrix.jsonl"):
        jp.load(tmp_path)
    bad = tmp_path / "bad.matrix.jsonl"
    bad.write_text('{"kind": "nope"}\n')
    with pytest.raises(jp.ProfilerError, match="bad.matrix.jsonl"):
        jp.load(bad)
    with pytest.raises(ValueError, match="--eps"):
        jp.load(ZOO, eps="lots")


def test_cells_carry_each_cells_rate_relative_to_its_blocks_reference():
    m = jp.load("tests/data/blocks/input-pipeline.matrix.jsonl")
    measured = m.cells.filter(pl.col("source") == "measured")
    assert measured["relative"].null_count() == 0
    assert (measured["relative_ci95_low"] <= measured["relative"]).all()
    assert (measured["relative"] <= measured["relative_ci95_high"]).all()
    assert measured["relative"].max() == 1.0
    assert (measured["relative_blocks"] >= 2).all()


def test_cells_carry_the_raw_and_the_host_adjusted_rates():
    m = jp.load("tests/data/blocks/input-pipeline.matrix.jsonl")
    measured = m.cells.filter(pl.col("source") == "measured")
    adjusted = measured.filter(pl.col("host_model").is_in(["proportional", "fitted"]))
    # The sweep's half-core cell follows the probe: it keeps its raw relative rate beside the
    # adjusted one, the slope it was read with and the share explained.
    assert adjusted.height >= 1
    assert adjusted["relative_raw"].null_count() == 0
    assert (adjusted["relative_raw"] != adjusted["relative"]).all()
    assert ((adjusted["host_explained"] > 0) & (adjusted["host_explained"] <= 1)).all()
    assert (adjusted["host_slope"] > 0).all()
    # Their absolute rates read at the quiet host's speed are there too, and positive.
    assert (adjusted["quiet_host_samples_per_s"] > 0).all()
    # A level the probe does not follow, and a cell whose ratios it would widen, keep their
    # rates as measured.
    raw = measured.filter(pl.col("host_model").is_in(["not_following", "misleads"]))
    assert raw.height >= 2
    assert raw["relative_raw"].null_count() == raw.height
    assert raw["host_slope"].null_count() == raw.height


def test_cells_and_headers_carry_the_machine_kind(tmp_path):
    old = "tests/data/blocks/input-pipeline.matrix.jsonl"
    # A matrix written before machine kinds were recorded loads as kind "unknown".
    m = jp.load(old)
    assert set(m.cells["machine_kind"].to_list()) == {"unknown"}
    assert "kind" not in m.headers[0]["machine"]
    # The same matrix with a machine kind in its header carries it on every row.
    lines = open(old).read().splitlines()
    header = json.loads(lines[0])
    header["machine"]["kind"] = "zen-3-2t-24g-0123abcd"
    header["machine"]["processor"] = {
        "vendor": "AuthenticAMD",
        "model_name": "AMD EPYC 7B13",
        "microarchitecture": "Zen 3",
        "extensions": ["avx2"],
        "sockets": 1,
        "cores": 1,
        "threads": 2,
    }
    path = tmp_path / "kind.matrix.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    k = jp.load(path)
    assert k.headers[0]["machine"]["kind"] == "zen-3-2t-24g-0123abcd"
    assert set(k.cells["machine_kind"].to_list()) == {"zen-3-2t-24g-0123abcd"}
    assert set(k.cells["machine_microarchitecture"].to_list()) == {"Zen 3"}
    assert set(k.cells["machine_cpu_extensions"].to_list()) == {"avx2"}
    assert k.cells.height == m.cells.height


def test_predicted_cells_read_with_their_intervals_as_the_cli_writes_them(tmp_path, profiler_bin):
    # resnet50's zoo matrix cut to its cells at 3 and 24 CPUs, the rest predicted by the CLI.
    lines = open(f"{ZOO}/resnet50.matrix.jsonl").read().splitlines()
    cells = [json.loads(line) for line in lines[1:]]
    top = max(c["memory_bytes"] for c in cells)
    given = [c for c in cells if c["memory_bytes"] == top and c["cpu"] in (3.0, 24.0)]
    for c in given:
        c["source"] = "measured"
    partial = tmp_path / "resnet50.matrix.jsonl"
    partial.write_text("\n".join([lines[0], *map(json.dumps, given)]) + "\n")
    out = tmp_path / "predicted.matrix.jsonl"
    subprocess.run(
        [str(profiler_bin), "predict", str(partial), "--cpu", "1,2,3,4,5,6,9,12,24", "-o", str(out)],
        check=True,
        capture_output=True,
    )
    m = jp.load(out)
    predicted = m.cells.filter(pl.col("source") == "predicted")
    assert predicted.height >= 7
    assert (predicted["ci95_low"] <= predicted["samples_per_s"]).all()
    assert (predicted["samples_per_s"] <= predicted["ci95_high"]).all()
    assert (predicted["ci95_high"] > predicted["ci95_low"]).all()
    # The truth of the zoo's cells at the top memory level, against the predicted intervals.
    truth = {c["cpu"]: c["throughput"]["samples_per_s"] for c in cells if c["memory_bytes"] == top}
    at_top = predicted.filter(pl.col("memory_bytes") == top)
    inside = [
        low <= truth[cpu] <= high
        for cpu, low, high in zip(at_top["cpu"], at_top["ci95_low"], at_top["ci95_high"])
    ]
    assert len(inside) == 7 and sum(inside) >= 6, inside
    assert (at_top["relative"] > 0).all()
    cli = subprocess.run(
        [str(profiler_bin), "export", str(out), "--format", "csv"], check=True, capture_output=True
    ).stdout
    expected = pl.read_csv(io.BytesIO(cli), infer_schema_length=None)
    assert expected.filter(pl.col("source") == "predicted").height == predicted.height
