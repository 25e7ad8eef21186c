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
    let parse_err = |line: usize, message: String| MatrixError::Parse {
        path: path.to_owned(),
        line,
        message,
    };
    let first = lines.first().ok_or_else(|| MatrixError::Empty {
        path: path.to_owned(),
    })?;
    let header: MatrixHeader = serde_json::from_str(first)
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
    for (i, text) in lines.iter().enumerate().skip(1) {
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

/// Replaces the header line of the matrix at `path`, keeping every cell line byte for byte.
/// The new file is written beside the old one and renamed over it, so a crash leaves either.
pub fn rewrite_header(path: &Path, header: &MatrixHeader) -> Result<(), MatrixError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let cells = text.split_once('\n').map_or("", |(_, rest)| rest);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let line = serde_json::to_string(header).expect("header serializes");
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(line.as_bytes())?;
        f.write_all(b"\n")?;
        f.write_all(cells.as_bytes())?;
        f.sync_all()
    };
    write().map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

/// Appends cells to a matrix file, each flushed and synced before `append` returns.
pub struct MatrixWriter {
    file: File,
    path: PathBuf,
}

impl MatrixWriter {
    /// Starts a new matrix file with `header`. A file already at `path` (an earlier sweep's
    /// cells, which cost real time to measure) is never destroyed: it is renamed to
    /// `<path>.previous`, replacing an older one, and that name is returned beside the writer.
    pub fn create(
        path: &Path,
        header: &MatrixHeader,
    ) -> Result<(Self, Option<PathBuf>), MatrixError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
        let kept = if path.exists() {
            let mut aside = path.as_os_str().to_owned();
            aside.push(".previous");
            let aside = PathBuf::from(aside);
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
        writer.write_line(&serde_json::to_string(header).expect("header serializes"))?;
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
        self.write_line(&serde_json::to_string(cell).expect("cell serializes"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the header line, keeping every cell (a CPU search learns the CPU axis as it
    /// goes), and goes on appending to the new file ([`rewrite_header`]).
    pub fn replace_header(&mut self, header: &MatrixHeader) -> Result<(), MatrixError> {
        rewrite_header(&self.path, header)?;
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
        assert_eq!(kept, dir.path().join("job.matrix.jsonl.previous"));
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
