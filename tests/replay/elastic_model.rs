//! Calibration of the elastic job model against the shipped reference data.

use profiler::replay::elastic::model::fit;
use profiler::replay::elastic::model::reference;
use std::path::{Path, PathBuf};

const POLLUX_APPS: [&str; 6] = ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"];

fn pollux_dir(app: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/elastic/pollux").join(app)
}

#[test]
fn explore_print_fits() {
    for app in POLLUX_APPS {
        let d = pollux_dir(app);
        let mut data = reference::read_placements(&d.join("placements.csv")).unwrap();
        data.extend(reference::read_scalability(&d.join("scalability.csv")).unwrap());
        let f = fit::fit_step_time(&data).unwrap();
        eprintln!("{app}: {:?} med {:.4} max {:.4} n {}", f.model, f.median_rel_err, f.max_rel_err, f.samples);
        let curves = reference::read_validations(&d).unwrap();
        let e = fit::fit_efficiency(&curves).unwrap();
        for c in fit::check_efficiency(&e, &curves) {
            eprintln!("   B {} med {:.4} max {:.4}", c.batch, c.median_rel_err, c.max_rel_err);
        }
    }
}
