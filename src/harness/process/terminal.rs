//! A pseudo-terminal for a job's output. Progress bars that draw only on a console (Rich, which
//! Lightning uses by default, prints nothing into a pipe until the process ends) see a terminal
//! of [`COLUMNS`] x [`ROWS`]; the profiler copies what they draw into the job's log file, where
//! the progress tail reads it as it reads a pipe's output (carriage returns end lines, escape
//! sequences are dropped). stdin stays closed: the terminal only ever receives output.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::thread::JoinHandle;

/// Width of the job's terminal: wide enough that a bar with its metrics never wraps.
pub const COLUMNS: u16 = 240;
/// Height of the job's terminal.
pub const ROWS: u16 = 50;
/// What the job is told its terminal is (where the spec sets no `TERM`): one that moves the
/// cursor and shows colour, so libraries draw as they do on a console.
pub const TERM: &str = "xterm-256color";

/// The two ends of a pseudo-terminal, before the job starts.
pub struct Terminal {
    master: OwnedFd,
    slave: OwnedFd,
}

impl Terminal {
    /// Opens a pseudo-terminal of [`COLUMNS`] x [`ROWS`] whose line discipline passes output
    /// through as written (no `\n` -> `\r\n`), as a pipe would.
    pub fn open() -> io::Result<Terminal> {
        let size = nix::pty::Winsize {
            ws_row: ROWS,
            ws_col: COLUMNS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).map_err(io::Error::from)?;
        let mut modes = nix::sys::termios::tcgetattr(&pty.slave).map_err(io::Error::from)?;
        modes
            .output_flags
            .remove(nix::sys::termios::OutputFlags::OPOST);
        nix::sys::termios::tcsetattr(&pty.slave, nix::sys::termios::SetArg::TCSANOW, &modes)
            .map_err(io::Error::from)?;
        Ok(Terminal {
            master: pty.master,
            slave: pty.slave,
        })
    }

    /// The terminal's job end, for the job's stdout and stderr.
    pub fn job_side(&self) -> io::Result<(Stdio, Stdio)> {
        Ok((
            Stdio::from(self.slave.try_clone()?),
            Stdio::from(self.slave.try_clone()?),
        ))
    }

    /// Once the job has started: closes the profiler's copy of the job end and copies what the
    /// job draws into `log` until every process holding the terminal has closed it.
    pub fn copy_into(self, log: File) -> io::Result<JoinHandle<()>> {
        drop(self.slave);
        let master = File::from(self.master);
        std::thread::Builder::new()
            .name("job-terminal".into())
            .spawn(move || copy(master, log))
    }
}

/// Copies until the terminal reports end of output: `EIO` once the last job end is closed (as
/// Linux reports it), or end of file.
fn copy(mut from: File, mut to: File) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A child sees a terminal of the set size on stdout and stderr, and what it writes to
    /// both arrives in the log, newlines unchanged.
    #[test]
    fn a_child_sees_a_terminal_and_its_output_reaches_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log_path = dir.path().join("out.log");
        let term = Terminal::open().unwrap();
        let (out, err) = term.job_side().unwrap();
        let mut child = Command::new("sh")
            .args([
                "-c",
                "[ -t 1 ] && [ -t 2 ] && echo tty; stty size <&1; printf 'bar\\r' >&2; echo done",
            ])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        let copier = term.copy_into(File::create(&log_path).unwrap()).unwrap();
        assert!(child.wait().unwrap().success());
        copier.join().unwrap();
        let log = std::fs::read_to_string(&log_path).unwrap();
        assert_eq!(log, format!("tty\n{ROWS} {COLUMNS}\nbar\rdone\n"));
    }
}
