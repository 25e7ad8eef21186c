//! One replay reader: a process forked from the profiler that reads its share of each epoch's
//! samples, the way a data loader's worker reads its share. After `fork` in a process with
//! other threads, only async-signal-safe calls are sound (another thread may have held the
//! allocator's lock): the reader allocates nothing, panics nowhere and calls only `libc`.

use super::Sample;
use crate::matrix::ReadAccess;
use std::ffi::CString;

/// Everything a reader needs, prepared before the fork.
pub(super) struct ReaderJob<'a> {
    pub files: &'a [CString],
    pub samples: &'a [Sample],
    /// Sample indices in the order of each epoch: the first fills the cache, the second is
    /// measured.
    pub orders: &'a [Vec<u32>; 2],
    pub reader: usize,
    pub readers: usize,
    pub access: ReadAccess,
    /// A buffer as large as the largest sample, allocated (and touched) before the fork.
    pub buf: *mut u8,
    /// Written one byte to when the reader is ready and when it has read the first epoch.
    pub ready: libc::c_int,
    /// Read one byte from before each epoch.
    pub go: libc::c_int,
}

/// What the reader holds open: the file `index`, as a descriptor or a map.
struct Open {
    index: usize,
    fd: libc::c_int,
    map: *mut libc::c_void,
    size: usize,
}

const PAGE: usize = 4096;

/// The reader's whole life; exits the process (0, or 1 where a read failed).
///
/// # Safety
/// Call only in a child just forked, with `job`'s pointers valid there.
pub(super) unsafe fn run(job: &ReaderJob) -> ! {
    let mut open: Option<Open> = None;
    let ok = unsafe {
        touch(job.buf, largest(job.samples))
            && signal(job.ready)
            && wait(job.go)
            && epoch(job, &job.orders[0], &mut open)
            && signal(job.ready)
            && wait(job.go)
            && epoch(job, &job.orders[1], &mut open)
    };
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}

fn largest(samples: &[Sample]) -> usize {
    samples.iter().map(|s| s.len as usize).max().unwrap_or(0)
}

/// Writes every page of the buffer, so that its copy is made (and charged) before the memory
/// limit is set.
unsafe fn touch(buf: *mut u8, len: usize) -> bool {
    let mut at = 0;
    while at < len {
        unsafe { std::ptr::write_volatile(buf.add(at), 0) };
        at += PAGE;
    }
    true
}

unsafe fn signal(fd: libc::c_int) -> bool {
    let byte = 1u8;
    loop {
        let n = unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
        if n == 1 {
            return true;
        }
        if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return false;
    }
}

unsafe fn wait(fd: libc::c_int) -> bool {
    let mut byte = 0u8;
    loop {
        let n = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            return true;
        }
        if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return false;
    }
}

/// Reads this reader's share of one epoch: every `readers`-th sample of `order`.
unsafe fn epoch(job: &ReaderJob, order: &[u32], open: &mut Option<Open>) -> bool {
    let mut at = job.reader;
    while at < order.len() {
        let sample = job.samples[order[at] as usize];
        if !unsafe { read_sample(job, sample, open) } {
            return false;
        }
        at += job.readers;
    }
    true
}

unsafe fn read_sample(job: &ReaderJob, sample: Sample, open: &mut Option<Open>) -> bool {
    let index = sample.file as usize;
    if open.as_ref().is_none_or(|o| o.index != index) {
        if let Some(old) = open.take() {
            unsafe { close(old) };
        }
        match unsafe { open_file(job, index) } {
            Some(o) => *open = Some(o),
            None => return false,
        }
    }
    let Some(o) = open.as_ref() else {
        return false;
    };
    match job.access {
        ReadAccess::Pread => {
            let mut done = 0usize;
            while done < sample.len as usize {
                let n = unsafe {
                    libc::pread(
                        o.fd,
                        job.buf.add(done).cast(),
                        sample.len as usize - done,
                        (sample.offset as usize + done) as libc::off_t,
                    )
                };
                if n == 0 {
                    break;
                }
                if n < 0 {
                    if unsafe { *libc::__errno_location() } == libc::EINTR {
                        continue;
                    }
                    return false;
                }
                done += n as usize;
            }
            true
        }
        ReadAccess::Map | ReadAccess::MapRandom | ReadAccess::MapSequential => {
            // One load a page, as a loader's copy out of the map faults each page in.
            let end = (sample.offset + sample.len).min(o.size as u64) as usize;
            let mut page = sample.offset as usize / PAGE * PAGE;
            let base = o.map.cast::<u8>();
            let mut sum = 0u8;
            while page < end {
                sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(base.add(page)) });
                page += PAGE;
            }
            std::hint::black_box(sum);
            true
        }
    }
}

unsafe fn open_file(job: &ReaderJob, index: usize) -> Option<Open> {
    let fd = unsafe { libc::open(job.files[index].as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let Some(advice) = madvise_flag(job.access) else {
        return Some(Open {
            index,
            fd,
            map: std::ptr::null_mut(),
            size: 0,
        });
    };
    let size = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
    if size <= 0 {
        unsafe { libc::close(fd) };
        return None;
    }
    let size = size as usize;
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        unsafe { libc::close(fd) };
        return None;
    }
    unsafe { libc::madvise(map, size, advice) };
    Some(Open {
        index,
        fd,
        map,
        size,
    })
}

unsafe fn close(o: Open) {
    if !o.map.is_null() {
        unsafe { libc::munmap(o.map, o.size) };
    }
    unsafe { libc::close(o.fd) };
}

/// The advice a map is given, as the job gave its own; `None` for reads by system call.
fn madvise_flag(access: ReadAccess) -> Option<libc::c_int> {
    match access {
        ReadAccess::Pread => None,
        ReadAccess::Map => Some(libc::MADV_NORMAL),
        ReadAccess::MapRandom => Some(libc::MADV_RANDOM),
        ReadAccess::MapSequential => Some(libc::MADV_SEQUENTIAL),
    }
}
