//! The probe's work: a small bytecode interpreter. A host that slows a virtual CPU in a spell
//! slows what leans on a core's shared parts (instruction dispatch through a jump table,
//! reference counts written back, a table read at computed places), as an interpreted or
//! decoding job does; a loop of register arithmetic barely slows. On a 2-core VM, beside the
//! input pipeline at half a core, this kernel's speed followed the job's 1-s rates with a
//! correlation of 0.91 (2-4 s windows: 0.94-0.95), the Python loop's in adjacent runs 0.93
//! (0.95-0.97) (`scripts/idle-probe.py --probe`).
//!
//! It runs in a process forked from a threaded profiler, where allocating is unsound: every
//! buffer is made before the fork and [`Kernel::run`] allocates nothing.

/// Objects the interpreter may hold at once: values on its stack, its locals and constants.
const OBJECTS: usize = 64;
/// Entries of the table the program reads at computed places (a power of two).
const TABLE: usize = 4096;

#[derive(Clone, Copy)]
enum Op {
    LoadConst(u8),
    LoadLocal(u8),
    StoreLocal(u8),
    Add,
    Mul,
    Xor,
    Index,
    Dup,
    /// Ends the program where the iterations are spent, else counts one down.
    Loop,
    JumpTo(u8),
}

/// One interpreter object: a value with a reference count, as a dynamic language keeps it.
#[derive(Clone, Copy, Default)]
struct Object {
    refs: u32,
    value: i64,
}

/// The interpreter's state, allocated once.
pub struct Kernel {
    objects: Vec<Object>,
    /// Indices of free objects (a free list, as an interpreter's allocator keeps).
    free: Vec<u8>,
    stack: Vec<u8>,
    locals: [u8; 3],
    consts: [u8; 2],
    table: Vec<i64>,
    code: Vec<Op>,
}

impl Default for Kernel {
    fn default() -> Self {
        Self::new()
    }
}

impl Kernel {
    pub fn new() -> Kernel {
        use Op::*;
        let mut k = Kernel {
            objects: vec![Object::default(); OBJECTS],
            free: (0..OBJECTS as u8).rev().collect(),
            stack: Vec::with_capacity(OBJECTS),
            locals: [0; 3],
            consts: [0; 2],
            table: (0..TABLE as i64)
                .map(|i| i.wrapping_mul(2_654_435_761) >> 3)
                .collect(),
            // n += 1; i = i * 7 + n; acc ^= table[i]
            code: vec![
                Loop,
                LoadLocal(0),
                LoadConst(0),
                Add,
                StoreLocal(0),
                LoadLocal(2),
                LoadConst(1),
                Mul,
                LoadLocal(0),
                Add,
                Dup,
                StoreLocal(2),
                Index,
                LoadLocal(1),
                Xor,
                StoreLocal(1),
                JumpTo(0),
            ],
        };
        k.consts = [k.alloc(1), k.alloc(7)];
        k.locals = [k.alloc(0), k.alloc(0), k.alloc(0)];
        k
    }

    fn alloc(&mut self, value: i64) -> u8 {
        let i = self
            .free
            .pop()
            .expect("the program holds fewer objects than OBJECTS");
        self.objects[i as usize] = Object { refs: 1, value };
        i
    }

    fn release(&mut self, i: u8) {
        let o = &mut self.objects[i as usize];
        o.refs -= 1;
        if o.refs == 0 {
            self.free.push(i);
        }
    }

    fn push_ref(&mut self, i: u8) {
        self.objects[i as usize].refs += 1;
        self.stack.push(i);
    }

    fn pop(&mut self) -> u8 {
        self.stack.pop().expect("the program is balanced")
    }

    fn binary(&mut self, f: impl Fn(i64, i64) -> i64) {
        let (b, a) = (self.pop(), self.pop());
        let value = f(
            self.objects[a as usize].value,
            self.objects[b as usize].value,
        );
        self.release(a);
        self.release(b);
        let r = self.alloc(value);
        self.stack.push(r);
    }

    /// Runs the program's loop `iterations` times; returns the instructions executed (the
    /// probe's unit of work) and the accumulator (kept, so the work is not optimised away).
    pub fn run(&mut self, iterations: u32) -> (u64, i64) {
        let (mut pc, mut left, mut executed) = (0usize, iterations, 0u64);
        loop {
            executed += 1;
            match self.code[pc] {
                Op::LoadConst(i) => self.push_ref(self.consts[i as usize]),
                Op::LoadLocal(i) => self.push_ref(self.locals[i as usize]),
                Op::StoreLocal(i) => {
                    let v = self.pop();
                    let old = std::mem::replace(&mut self.locals[i as usize], v);
                    self.release(old);
                }
                Op::Add => self.binary(i64::wrapping_add),
                Op::Mul => self.binary(i64::wrapping_mul),
                Op::Xor => self.binary(|a, b| a ^ b),
                Op::Index => {
                    let i = self.pop();
                    let at = self.objects[i as usize].value as usize & (TABLE - 1);
                    self.release(i);
                    let r = self.alloc(self.table[at]);
                    self.stack.push(r);
                }
                Op::Dup => {
                    let top = *self.stack.last().expect("the program is balanced");
                    self.push_ref(top);
                }
                Op::Loop if left == 0 => {
                    return (executed, self.objects[self.locals[1] as usize].value);
                }
                Op::Loop => left -= 1,
                Op::JumpTo(to) => {
                    pc = to as usize;
                    continue;
                }
            }
            pc += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program is balanced: every iteration leaves the stack empty and the free list as it
    /// was, so a probe can run it forever without allocating; the work is the same for the same
    /// iterations and the result follows the program.
    #[test]
    fn runs_without_leaking_objects() {
        let mut k = Kernel::new();
        let free = k.free.len();
        let (work, acc) = k.run(1000);
        assert_eq!(work, 1000 * 17 + 1);
        assert!(k.stack.is_empty());
        assert_eq!(k.free.len(), free);
        let (mut n, mut i, mut expect) = (0i64, 0i64, 0i64);
        for _ in 0..1000 {
            n += 1;
            i = i.wrapping_mul(7).wrapping_add(n);
            expect ^= k.table[i as usize & (TABLE - 1)];
        }
        assert_eq!(acc, expect);
        assert_eq!(k.run(1000).0, work);
    }
}
