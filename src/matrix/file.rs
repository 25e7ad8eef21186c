//! Reading and appending `*.matrix.jsonl` files.

use super::{Cell, MATRIX_KIND, Matrix, MatrixHeader, SCHEMA_VERSION};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: is empty; expected a matrix header line")]
    Empty { path: PathBuf },
    /// JSON has no NaN or infinity (serde_json would write `null`, which no reader accepts):
    /// such a line is refused rather than written.
    #[error("{path}: refusing to write a non-finite number (NaN or infinity) in {what}")]
    NonFinite { path: PathBuf, what: String },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> MatrixError + '_ {
    move |source| MatrixError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Reads a whole matrix. A torn last line (the writer was killed mid-write) is ignored, since
/// the cell it held was never finished; any other malformed line is an error naming its line.
pub fn load_matrix(path: &Path) -> Result<Matrix, MatrixError> {
    let file = File::open(path).map_err(io_err(path))?;
    let mut lines = Vec::new();
    for line in BufReader::new(file).lines() {
        lines.push(line.map_err(io_err(path))?);
    }
    parse_lines(path, &lines)
}

/// A whole matrix from its text, as [`load_matrix`] reads a file; `path` names it in errors.
pub fn parse_matrix(path: &Path, text: &str) -> Result<Matrix, MatrixError> {
    parse_lines(path, &text.lines().collect::<Vec<&str>>())
}

/// The `*.matrix.jsonl` files under `path` and its subfolders, `depth` levels deep at most (1:
/// the folder's own), sorted; `path` itself when it is a file.
pub fn matrix_files(path: &Path, depth: usize) -> Result<Vec<PathBuf>, MatrixError> {
    let mut out = Vec::new();
    collect_matrix_files(path, depth, &mut out)?;
    out.sort();
    Ok(out)
}

fn collect_matrix_files(
    path: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
) -> Result<(), MatrixError> {
    if path.is_file() {
        out.push(path.to_owned());
        return Ok(());
    }
    for entry in std::fs::read_dir(path).map_err(io_err(path))? {
        let p = entry.map_err(io_err(path))?.path();
        if p.is_dir() && depth > 1 {
            collect_matrix_files(&p, depth - 1, out)?;
        } else if p.to_string_lossy().ends_with(".matrix.jsonl") {
            out.push(p);
        }
    }
    Ok(())
}

fn parse_lines(path: &Path, lines: &[impl AsRef<str>]) -> Result<Matrix, MatrixError> {
    let parse_err = |line: usize, message: String| MatrixError::Parse {
        path: path.to_owned(),
        line,
        message,
    };
    let first = lines.first().ok_or_else(|| MatrixError::Empty {
        path: path.to_owned(),
    })?;
    let header: MatrixHeader = serde_json::from_str(first.as_ref())
        .map_err(|e| parse_err(1, format!("not a matrix header: {e}")))?;
    if header.kind != MATRIX_KIND {
        return Err(parse_err(
            1,
            format!("kind is {:?}, expected {MATRIX_KIND:?}", header.kind),
        ));
    }
    if header.schema_version != SCHEMA_VERSION {
        return Err(parse_err(
            1,
            format!(
                "schema_version {} is not supported (this build reads {SCHEMA_VERSION})",
                header.schema_version
            ),
        ));
    }
    let last = lines.len();
    let mut cells = Vec::new();
    for (i, text) in lines.iter().map(AsRef::as_ref).enumerate().skip(1) {
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Cell>(text) {
            Ok(cell) => cells.push(cell),
            Err(e) if e.is_eof() && i + 1 == last => break,
            Err(e) => return Err(parse_err(i + 1, format!("not a matrix cell: {e}"))),
        }
    }
    Ok(Matrix { header, cells })
}

impl Matrix {
    /// The matrix as JSON lines, exactly as [`MatrixWriter`] writes it.
    pub fn to_jsonl(&self) -> String {
        let mut s = serde_json::to_string(&self.header).expect("header serializes");
        s.push('\n');
        for c in &self.cells {
            s.push_str(&serde_json::to_string(c).expect("cell serializes"));
            s.push('\n');
        }
        s
    }
}

/// Replaces the header line of the matrix at `path`, keeping every cell line byte for byte
/// (a header holding NaN or an infinity is refused, the file left as it was).
/// The new file is written beside the old one and renamed over it, so a crash leaves either.
pub fn rewrite_header(path: &Path, header: &MatrixHeader) -> Result<(), MatrixError> {
    let line = finite_json(path, header, "the header")?;
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let cells = text.split_once('\n').map_or("", |(_, rest)| rest);
    replace_file(path, &format!("{line}\n{cells}"))
}

/// Replaces the whole matrix at `path` with `matrix` (cells measured again on more launches,
/// intervals that now hold the spread between launches); refused, the file left as it was, if
/// any line would hold NaN or an infinity.
pub fn rewrite_matrix(path: &Path, matrix: &Matrix) -> Result<(), MatrixError> {
    let mut text = finite_json(path, &matrix.header, "the header")?;
    text.push('\n');
    for cell in &matrix.cells {
        text.push_str(&finite_json(path, cell, "a cell")?);
        text.push('\n');
    }
    replace_file(path, &text)
}

/// Writes `text` beside `path` and renames it over it, so a crash leaves the old file or the
/// new one, never a torn one.
fn replace_file(path: &Path, text: &str) -> Result<(), MatrixError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    };
    write().map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

/// Whether the file at `path` has anything after its header line (anything that is not
/// whitespace: a torn cell counts, it may be all that is left of a measurement).
fn holds_cells(path: &Path) -> bool {
    match std::fs::read(path) {
        Ok(bytes) => match bytes.iter().position(|&b| b == b'\n') {
            Some(i) => bytes[i + 1..].iter().any(|b| !b.is_ascii_whitespace()),
            None => false,
        },
        Err(_) => path.exists(),
    }
}

/// `<path>.<unix seconds>.previous`, with `-2`, `-3`... when that name is taken.
fn generation_name(path: &Path) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (1..)
        .map(|n| {
            let mut name = path.as_os_str().to_owned();
            if n == 1 {
                name.push(format!(".{stamp}.previous"));
            } else {
                name.push(format!(".{stamp}-{n}.previous"));
            }
            PathBuf::from(name)
        })
        .find(|p| !p.exists())
        .expect("some generation name is free")
}

/// The JSON line of `value`, refused if it holds NaN or an infinity. serde_json writes those as
/// `null`, so a value that does not read back equal to itself holds one (`float_roundtrip`
/// makes every finite number read back exactly).
fn finite_json<T>(path: &Path, value: &T, what: &str) -> Result<String, MatrixError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq,
{
    serde_json::to_string(value)
        .ok()
        .filter(|text| serde_json::from_str::<T>(text).is_ok_and(|back| back == *value))
        .ok_or_else(|| MatrixError::NonFinite {
            path: path.to_owned(),
            what: what.to_string(),
        })
}

/// Appends cells to a matrix file, each flushed and synced before `append` returns.
pub struct MatrixWriter {
    file: File,
    path: PathBuf,
}

impl MatrixWriter {
    /// Starts a new matrix file with `header`. A file already at `path` that holds cells (an
    /// earlier sweep's, which cost real time to measure) is never destroyed: it is renamed to
    /// `<path>.<unix seconds>.previous` (a name no other generation has), and that name is
    /// returned beside the writer. A file with no cell (a header only) is simply replaced.
    pub fn create(
        path: &Path,
        header: &MatrixHeader,
    ) -> Result<(Self, Option<PathBuf>), MatrixError> {
        let header_line = finite_json(path, header, "the header")?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
        let kept = if holds_cells(path) {
            let aside = generation_name(path);
            std::fs::rename(path, &aside).map_err(io_err(path))?;
            Some(aside)
        } else {
            None
        };
        let file = File::create(path).map_err(io_err(path))?;
        let mut writer = MatrixWriter {
            file,
            path: path.to_owned(),
        };
        writer.write_line(&header_line)?;
        Ok((writer, kept))
    }

    /// Reopens an existing matrix for appending; returns the writer and the cells already there.
    /// A torn last line (no trailing newline) is cut off in place, so nothing finished is rewritten.
    pub fn resume(path: &Path) -> Result<(Self, Matrix), MatrixError> {
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(io_err(path))?;
        if !bytes.ends_with(b"\n") {
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            file.set_len(keep as u64).map_err(io_err(path))?;
        }
        let matrix = load_matrix(path)?;
        Ok((
            MatrixWriter {
                file,
                path: path.to_owned(),
            },
            matrix,
        ))
    }

    pub fn append(&mut self, cell: &Cell) -> Result<(), MatrixError> {
        let line = finite_json(&self.path, cell, "a cell")?;
        self.write_line(&line)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the header line, keeping every cell (a CPU search learns the CPU axis as it
    /// goes), and goes on appending to the new file ([`rewrite_header`]).
    pub fn replace_header(&mut self, header: &MatrixHeader) -> Result<(), MatrixError> {
        rewrite_header(&self.path, header)?;
        self.reopen()
    }

    /// Replaces the whole file with `matrix` ([`rewrite_matrix`]) and goes on appending to it.
    pub fn replace_all(&mut self, matrix: &Matrix) -> Result<(), MatrixError> {
        rewrite_matrix(&self.path, matrix)?;
        self.reopen()
    }

    fn reopen(&mut self) -> Result<(), MatrixError> {
        self.file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(io_err(&self.path))?;
        Ok(())
    }

    fn write_line(&mut self, line: &str) -> Result<(), MatrixError> {
        let path = self.path.clone();
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(io_err(&path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::fixtures::{cell, header};

    #[test]
    fn a_new_sweep_keeps_the_previous_matrix_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.matrix.jsonl");
        let (mut w, kept) = MatrixWriter::create(&path, &header("first")).unwrap();
        assert_eq!(kept, None);
        w.append(&cell(1.0)).unwrap();
        drop(w);
        let (_w, kept) = MatrixWriter::create(&path, &header("second")).unwrap();
        let kept = kept.expect("previous file moved aside");
        let name = kept.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("job.matrix.jsonl.") && name.ends_with(".previous"),
            "{name}"
        );
        let old = load_matrix(&kept).unwrap();
        assert_eq!(
            (old.header.job.name.as_str(), old.cells.len()),
            ("first", 1)
        );
        let new = load_matrix(&path).unwrap();
        assert_eq!(
            (new.header.job.name.as_str(), new.cells.len()),
            ("second", 0)
        );
    }

    #[test]
    fn runs_that_fail_early_never_destroy_a_measured_matrix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.matrix.jsonl");
        let (mut w, _) = MatrixWriter::create(&path, &header("complete")).unwrap();
        w.append(&cell(1.0)).unwrap();
        w.append(&cell(2.0)).unwrap();
        drop(w);
        // Two later sweeps that write their header and then fail before their first cell, and
        // a third that measures one cell: every matrix that held cells is still on disk.
        MatrixWriter::create(&path, &header("fails-1")).unwrap();
        MatrixWriter::create(&path, &header("fails-2")).unwrap();
        let (mut w, _) = MatrixWriter::create(&path, &header("third")).unwrap();
        w.append(&cell(4.0)).unwrap();
        drop(w);
        MatrixWriter::create(&path, &header("fourth")).unwrap();
        let mut kept: Vec<(String, usize)> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| load_matrix(&e.unwrap().path()).unwrap())
            .map(|m| (m.header.job.name, m.cells.len()))
            .collect();
        kept.sort();
        assert_eq!(
            kept,
            vec![
                ("complete".to_string(), 2),
                ("fourth".to_string(), 0),
                ("third".to_string(), 1)
            ]
        );
    }

    #[test]
    fn non_finite_numbers_are_refused_and_the_file_still_loads() {
        use crate::matrix::{CellSource, Throughput};
        let measured = |rate: f64, high: f64| Cell {
            source: CellSource::Measured,
            throughput: Some(Throughput {
                samples_per_s: rate,
                ci95_low: 0.0,
                ci95_high: high,
                windows: 5,
                measured_s: 10.0,
                launches: Vec::new(),
            }),
            note: None,
            ..cell(2.0)
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.matrix.jsonl");
        let (mut w, _) = MatrixWriter::create(&path, &header("j")).unwrap();
        w.append(&cell(1.0)).unwrap();
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for c in [
                measured(bad, 1.0),
                measured(1.0, bad),
                Cell {
                    wall_s: bad,
                    ..cell(2.0)
                },
            ] {
                let e = w.append(&c).unwrap_err();
                assert!(matches!(e, MatrixError::NonFinite { .. }), "{e}");
            }
        }
        // A zero rate is a finite number, and a valid cell.
        let zero = measured(0.0, 0.0);
        w.append(&zero).unwrap();
        let mut h = header("j");
        h.axes.cpu = vec![f64::NAN];
        assert!(w.replace_header(&h).is_err());
        // The same for a header rewritten from outside a sweep (validate records its result so).
        let e = rewrite_header(&path, &h).unwrap_err();
        assert!(matches!(e, MatrixError::NonFinite { .. }), "{e}");
        assert_eq!(load_matrix(&path).unwrap().cells, vec![cell(1.0), zero]);
    }

    #[test]
    fn a_new_header_keeps_the_cells_and_appending_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.matrix.jsonl");
        let (mut w, _) = MatrixWriter::create(&path, &header("a")).unwrap();
        w.append(&cell(2.0)).unwrap();
        let mut h = header("a");
        h.axes.cpu = vec![2.0, 0.5];
        w.replace_header(&h).unwrap();
        w.append(&cell(0.5)).unwrap();
        let m = load_matrix(&path).unwrap();
        assert_eq!(m.header, h);
        assert_eq!(m.cells, vec![cell(2.0), cell(0.5)]);
        assert!(!dir.path().join("m.matrix.jsonl.tmp").exists());
    }

    #[test]
    fn rewriting_the_header_keeps_every_cell() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.matrix.jsonl");
        let (mut w, _) = MatrixWriter::create(&path, &header("j")).unwrap();
        w.append(&cell(1.0)).unwrap();
        w.append(&cell(2.0)).unwrap();
        drop(w);
        let mut h = header("j");
        h.provenance = Some("rewritten".into());
        rewrite_header(&path, &h).unwrap();
        let m = load_matrix(&path).unwrap();
        assert_eq!(m.header, h);
        assert_eq!(m.cells, vec![cell(1.0), cell(2.0)]);
        assert!(!dir.path().join("job.matrix.jsonl.tmp").exists());
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_cut_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.matrix.jsonl");
        let (mut w, _) = MatrixWriter::create(&path, &header("j")).unwrap();
        w.append(&cell(1.0)).unwrap();
        drop(w);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"cpu": 2.0, "memory_by"#).unwrap();
        drop(f);
        assert_eq!(load_matrix(&path).unwrap().cells, vec![cell(1.0)]);
        let (mut w, m) = MatrixWriter::resume(&path).unwrap();
        assert_eq!(m.cells.len(), 1);
        w.append(&cell(2.0)).unwrap();
        assert_eq!(
            load_matrix(&path).unwrap().cells,
            vec![cell(1.0), cell(2.0)]
        );
        // A malformed line that is not the last one is an error naming it.
        std::fs::write(
            &path,
            format!(
                "{}\nnot json\n{}\n",
                serde_json::to_string(&header("j")).unwrap(),
                serde_json::to_string(&cell(1.0)).unwrap()
            ),
        )
        .unwrap();
        let err = load_matrix(&path).unwrap_err().to_string();
        assert!(err.contains(":2: not a matrix cell"), "{err}");
    }
}
