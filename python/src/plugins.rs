//! Policies and mechanisms written in Python, behind the library's own [`Policy`] and
//! [`Mechanism`] traits, so the engine keeps its fast path and calls Python only when it needs
//! a decision: a job's key (when the policy's `key_update` says it may have changed) and a
//! round's placements (when the jobs the mechanism pulled changed).
//!
//! What Python sees is in `views.rs`.
//!
//! A plug-in that raises, returns the wrong type or a key that is not a number does not panic:
//! its first failure (with the Python traceback) is kept, the engine stops the replay after the
//! round, and the error names the round. The engine checks every placement itself.

use crate::deadline::Deadline;
use crate::traceback;
use crate::views::{Alive, JobView, MechanismView, OrderView, PlacementView, RoundView};
use profiler::replay::job::JobState;
use profiler::replay::mechanism::{self, MechCtx, MechStats, Mechanism, Order, Placement};
use profiler::replay::policy::{self, KeyUpdate, Policy, PolicyCtx};
use profiler::replay::profile::Semantics;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

/// The first failure of a plug-in; later calls are skipped.
#[derive(Default)]
pub(crate) struct Failure(Mutex<Option<String>>);

impl Failure {
    pub(crate) fn set(&self, message: String) {
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(message);
        }
    }
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub(crate) fn failed(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

/// A plug-in's `name` attribute, or its class's name.
pub(crate) fn plugin_name(obj: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    let name: String = match obj.getattr("name") {
        Ok(n) => n.extract()?,
        Err(_) => obj.get_type().name()?.extract()?,
    };
    // Names live as long as the built-ins' (`&'static str`); a replay makes one per plug-in.
    Ok(Box::leak(name.into_boxed_str()))
}

fn bool_attr(obj: &Bound<'_, PyAny>, name: &str, default: bool) -> PyResult<bool> {
    match obj.getattr(name) {
        Ok(v) => v
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("`{name}` must be True or False"))),
        Err(_) => Ok(default),
    }
}

/// A Python object with `key(job, round) -> float` as a [`Policy`].
pub struct PyPolicy {
    obj: Py<PyAny>,
    deadline: Arc<Deadline>,
    name: &'static str,
    update: KeyUpdate,
    uses_priority: bool,
    selected_only: bool,
    failure: Failure,
}

impl PyPolicy {
    pub fn new(obj: &Bound<'_, PyAny>, deadline: Arc<Deadline>) -> PyResult<Self> {
        if !obj.hasattr("key")? {
            return Err(PyTypeError::new_err(
                "a policy needs a method key(job, round) -> float (lower runs first)",
            ));
        }
        let update = match obj.getattr("key_update") {
            Err(_) => KeyUpdate::EveryRound,
            Ok(v) => match v.extract::<String>()?.as_str() {
                "static" => KeyUpdate::Static,
                "when_run" => KeyUpdate::WhenRun,
                "every_round" => KeyUpdate::EveryRound,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "key_update {other:?}: expected \"static\", \"when_run\" or \"every_round\""
                    )));
                }
            },
        };
        Ok(PyPolicy {
            obj: obj.clone().unbind(),
            deadline,
            name: plugin_name(obj)?,
            update,
            uses_priority: bool_attr(obj, "uses_priority", true)?,
            selected_only: bool_attr(obj, "synergy_selected_only", false)?,
            failure: Failure::default(),
        })
    }
}

impl Policy for PyPolicy {
    fn name(&self) -> &'static str {
        self.name
    }
    fn key(&self, job: &JobState, ctx: &PolicyCtx) -> f64 {
        if self.failure.failed() {
            return 0.0;
        }
        Python::attach(|py| {
            let alive = Alive::new();
            let round = RoundView {
                // SAFETY: only the lifetime is erased; the view checks `alive` before use.
                ctx: unsafe {
                    std::mem::transmute::<*const PolicyCtx<'_>, *const PolicyCtx<'static>>(ctx)
                },
                alive: alive.clone(),
            };
            let view = JobView {
                state: job.clone(),
                index: 0,
            };
            let (result, late) = self
                .deadline
                .call(py, || self.obj.bind(py).call_method1("key", (view, round)));
            alive.end();
            let key = match result {
                Err(e) if late => Err(format!(
                    "key() of job {} did not return within {}:\n{}",
                    job.spec.id,
                    self.deadline.describe(),
                    traceback(py, &e)
                )),
                Err(e) => Err(format!(
                    "key() of job {} raised:\n{}",
                    job.spec.id,
                    traceback(py, &e)
                )),
                Ok(v) => match v.extract::<f64>() {
                    Ok(k) if !k.is_nan() => Ok(k),
                    Ok(_) => Err(format!("key() of job {} returned NaN", job.spec.id)),
                    Err(_) => Err(format!(
                        "key() of job {} returned {}, not a number",
                        job.spec.id,
                        v.get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    )),
                },
            };
            key.unwrap_or_else(|message| {
                self.failure.set(message);
                0.0
            })
        })
    }
    fn key_update(&self, _: Semantics) -> KeyUpdate {
        self.update
    }
    fn uses_priority(&self) -> bool {
        self.uses_priority
    }
    fn synergy_selected_only(&self) -> bool {
        self.selected_only
    }
    fn failure(&self) -> Option<String> {
        self.failure.get()
    }
}

/// A built-in policy's key, for Python classes that derive from a built-in.
#[pyfunction]
fn builtin_key(name: &str, job: &JobView, round: &RoundView) -> PyResult<f64> {
    let p = policy::by_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown policy {name:?}")))?;
    Ok(p.key(&job.state, round.ctx()?))
}

/// A built-in policy's traits: (key_update, uses_priority, synergy_selected_only).
#[pyfunction]
fn builtin_policy_traits(name: &str) -> PyResult<(&'static str, bool, bool)> {
    let p = policy::by_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown policy {name:?}")))?;
    let update = match p.key_update(Semantics::Exact) {
        KeyUpdate::Static => "static",
        KeyUpdate::WhenRun => "when_run",
        KeyUpdate::EveryRound => "every_round",
    };
    Ok((update, p.uses_priority(), p.synergy_selected_only()))
}

/// A Python object with `allocate(round, order) -> placements` as a [`Mechanism`].
pub struct PyMechanism {
    obj: Py<PyAny>,
    deadline: Arc<Deadline>,
    name: &'static str,
    fair: bool,
    tune: bool,
    failure: Failure,
}

impl PyMechanism {
    pub fn new(obj: &Bound<'_, PyAny>, deadline: Arc<Deadline>) -> PyResult<Self> {
        if !obj.hasattr("allocate")? {
            return Err(PyTypeError::new_err(
                "a mechanism needs a method allocate(round, order) -> list of placements",
            ));
        }
        Ok(PyMechanism {
            obj: obj.clone().unbind(),
            deadline,
            name: plugin_name(obj)?,
            fair: bool_attr(obj, "synergy_fair", false)?,
            tune: bool_attr(obj, "synergy_tune", false)?,
            failure: Failure::default(),
        })
    }
}

/// A placement from what `allocate` returned: a Placement or a tuple (job, server, GPUs,
/// cores, GB) whose job is a JobView or its index.
fn placement_of(item: &Bound<'_, PyAny>) -> PyResult<Placement> {
    let p = match item.cast::<PlacementView>() {
        Ok(p) => p.get().clone(),
        Err(_) => {
            let (job, server, gpus, cpus, mem_gb): (Bound<'_, PyAny>, usize, u32, f64, f64) =
                item.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "expected a Placement or a tuple (job, server, gpus, cpus, mem_gb), got {}",
                        item.repr().map(|r| r.to_string()).unwrap_or_default()
                    ))
                })?;
            PlacementView::new(&job, server, gpus, cpus, mem_gb)?
        }
    };
    Ok(Placement {
        job: p.job,
        server: p.server,
        gpus: p.gpus,
        cpus: p.cpus,
        mem_gb: p.mem_gb,
    })
}

impl Mechanism for PyMechanism {
    fn name(&self) -> &'static str {
        self.name
    }
    fn allocate(
        &self,
        ctx: &MechCtx,
        order: &mut Order,
        out: &mut Vec<Placement>,
        _: &mut MechStats,
    ) {
        if self.failure.failed() {
            return;
        }
        Python::attach(|py| {
            let alive = Alive::new();
            // SAFETY (both): only lifetimes are erased; the views check `alive` before use.
            let view = MechanismView {
                ctx: unsafe {
                    std::mem::transmute::<*const MechCtx<'_>, *const MechCtx<'static>>(ctx)
                },
                alive: alive.clone(),
            };
            let order = OrderView {
                order: unsafe {
                    std::mem::transmute::<
                        *mut (dyn Iterator<Item = usize> + '_),
                        *mut (dyn Iterator<Item = usize> + 'static),
                    >(order)
                },
                jobs: ctx.jobs as *const [JobState],
                alive: alive.clone(),
            };
            let (result, late) = self.deadline.call(py, || {
                self.obj.bind(py).call_method1("allocate", (view, order))
            });
            let placed = result.and_then(|r| {
                r.try_iter()
                    .map_err(|_| {
                        PyTypeError::new_err(format!(
                            "allocate() must return a list of placements, got {}",
                            r.get_type()
                                .name()
                                .map(|n| n.to_string())
                                .unwrap_or_default()
                        ))
                    })?
                    .map(|item| placement_of(&item?))
                    .collect::<PyResult<Vec<Placement>>>()
            });
            alive.end();
            match placed {
                Ok(p) => out.extend(p),
                Err(e) if late => self.failure.set(format!(
                    "allocate() did not return within {}:\n{}",
                    self.deadline.describe(),
                    traceback(py, &e)
                )),
                Err(e) => self
                    .failure
                    .set(format!("allocate() failed:\n{}", traceback(py, &e))),
            }
        })
    }
    fn synergy_fair(&self) -> bool {
        self.fair
    }
    fn synergy_tune(&self) -> bool {
        self.tune
    }
    fn failure(&self) -> Option<String> {
        self.failure.get()
    }
}

/// A built-in mechanism's placements for the round, for Python classes that derive from one.
#[pyfunction]
fn builtin_allocate(
    name: &str,
    round: &MechanismView,
    order: &mut OrderView,
) -> PyResult<Vec<PlacementView>> {
    let m = mechanism::by_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown mechanism {name:?}")))?;
    let ctx = round.ctx()?;
    order.alive.check("order")?;
    // SAFETY: as OrderView::__next__.
    let iter = unsafe { &mut *order.order };
    let mut out = Vec::new();
    m.allocate(ctx, iter, &mut out, &mut MechStats::default());
    Ok(out.into_iter().map(PlacementView::from).collect())
}

/// A built-in mechanism's traits: (synergy_fair, synergy_tune).
#[pyfunction]
fn builtin_mechanism_traits(name: &str) -> PyResult<(bool, bool)> {
    let m = mechanism::by_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown mechanism {name:?}")))?;
    Ok((m.synergy_fair(), m.synergy_tune()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(builtin_key, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_policy_traits, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_allocate, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_mechanism_traits, m)?)?;
    Ok(())
}
