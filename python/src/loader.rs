//! The data loaders' schedules (`plan::loader`, the same code the simulator's `loader-phases`
//! runs) for `Records.epoch` and `RecordDataset`'s workers: `union_extents` and `share`, the sweep
//! of an epoch's union in offset order (libprefetch, ATC 2009, section 3.3's C-LOOK order over the
//! whole list), and `LoaderPhases`, one reader's list advised a phase ahead (section 4.5's window).
//! Byte ranges cross as `int64` pairs `(offset, length)` in native byte order, as `willneed` takes
//! them; in Python the union alone cost 120-250 ms for a 70,938-record epoch.

use plan::loader::{self, Extent, Phases};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::pages::{chosen, int64s};

/// `extents` as `int64` pairs.
fn to_bytes<'py>(py: Python<'py>, extents: &[Extent]) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = extents
        .iter()
        .flat_map(|e| [e.offset, e.length].map(|v| i64::try_from(v).unwrap_or(i64::MAX)))
        .flat_map(i64::to_ne_bytes)
        .collect();
    PyBytes::new(py, &bytes)
}

/// The records `order` names as `(offset, length)`; `ValueError` for a page size that is not
/// positive, offsets and lengths of different counts, an index out of range or a negative value.
fn records(offsets: &[u8], lengths: &[u8], order: &[u8], page: i64) -> PyResult<Vec<(u64, u64)>> {
    let (offsets, lengths) = (int64s(offsets, "offsets")?, int64s(lengths, "lengths")?);
    if page <= 0 || offsets.len() != lengths.len() {
        return Err(PyValueError::new_err(
            "a positive page size and one length per offset",
        ));
    }
    let chosen = chosen(&offsets, &lengths, &int64s(order, "order")?)?;
    Ok(chosen
        .into_iter()
        .map(|(o, n)| (o as u64, n as u64))
        .collect())
}

/// The pages of the records `order` names as byte ranges in offset order, ranges that touch or
/// overlap merged, empty records left out (`plan::loader::union`).
#[pyfunction]
pub fn union_extents<'py>(
    py: Python<'py>,
    offsets: &[u8],
    lengths: &[u8],
    order: &[u8],
    page: i64,
) -> PyResult<Bound<'py, PyBytes>> {
    let records = records(offsets, lengths, order, page)?;
    Ok(to_bytes(py, &loader::union(records, page as u64)))
}

/// Reader `worker` of `workers`' share of `extents` (whole pages in offset order, `int64` pairs)
/// by pages, cut in calls of at most `call` bytes (`plan::loader::share`).
#[pyfunction]
pub fn share<'py>(
    py: Python<'py>,
    extents: &[u8],
    page: u64,
    worker: u64,
    workers: u64,
    call: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    if page == 0 || call == 0 || worker >= workers {
        return Err(PyValueError::new_err(
            "a positive page and call, and a worker below workers",
        ));
    }
    let values = int64s(extents, "extents")?;
    if values.len() % 2 != 0 {
        return Err(PyValueError::new_err(
            "extents are (offset, length) pairs: an even count of int64 values",
        ));
    }
    let extents: Vec<Extent> = values
        .chunks_exact(2)
        .map(|pair| Extent {
            offset: pair[0].max(0) as u64,
            length: pair[1].max(0) as u64,
        })
        .collect();
    Ok(to_bytes(
        py,
        &loader::share(&extents, page, worker, workers, call),
    ))
}

/// One reader's records (those `order` names, in that order) cut into phases of at most
/// `phase_bytes` of pages (`plan::loader::Phases`).
#[pyclass(module = "libprefetch._native")]
pub struct LoaderPhases(Phases);

#[pymethods]
impl LoaderPhases {
    #[new]
    fn new(
        offsets: &[u8],
        lengths: &[u8],
        order: &[u8],
        page: i64,
        phase_bytes: u64,
    ) -> PyResult<LoaderPhases> {
        let records = records(offsets, lengths, order, page)?;
        Ok(LoaderPhases(Phases::new(records, page as u64, phase_bytes)))
    }

    /// The positions where phases start.
    #[getter]
    fn starts(&self) -> Vec<usize> {
        self.0.starts().to_vec()
    }

    /// The phases due before the first read, as `(first, end)`.
    fn first_due(&self) -> (usize, usize) {
        let due = self.0.first_due();
        (due.start, due.end)
    }

    /// The reader is at `position`: the phases that become due, as `(first, end)`.
    fn enter(&mut self, position: usize) -> (usize, usize) {
        let due = self.0.enter(position);
        (due.start, due.end)
    }

    /// The position at which the reader enters the next phase (past the last record: none left).
    fn next_start(&self) -> usize {
        self.0.next_start()
    }

    /// The WILLNEED calls of `phase` (`int64` pairs): its pages in offset order, in calls of at
    /// most `call` bytes.
    fn calls<'py>(
        &self,
        py: Python<'py>,
        phase: usize,
        call: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if call == 0 {
            return Err(PyValueError::new_err("call must be positive"));
        }
        Ok(to_bytes(py, &self.0.calls(phase, call)))
    }
}
