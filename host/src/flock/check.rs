//! `murmur flock check`: every GPU method against the CPU reference from the same start, and the
//! device radix sort against a CPU sort. Prints tables; any failure makes the command fail.

use super::cpu::CpuFlock;
use super::cuda::{CudaFlock, UpdateForm};
use super::{CellOrder, FlockBackend, FlockSettings, FlockState, Method, SimError, SortArg};
use crate::gpu::sort::{check_sort, RadixSort};
use crate::gpu::Gpu;

/// Largest allowed 1-step difference (absolute, per component) between GPU and CPU.
pub const ONE_STEP_TOLERANCE: f32 = 1e-4;

/// One parity row.
#[derive(Clone, Debug)]
pub struct ParityRow {
    pub n: usize,
    pub method: Method,
    /// The GPU update kernel that ran.
    pub kernel: &'static str,
    pub factor: f32,
    pub order: CellOrder,
    /// Max |pos| and |vel| component difference after 1 step.
    pub one: (f32, f32),
    /// The same after `steps` steps.
    pub many: (f32, f32),
    pub pass: bool,
}

/// Runs `method` on the GPU and the CPU reference (`coherent`, itself checked against `naive`
/// by the property tests) from `start` and compares them after 1 and `steps` steps.
pub fn parity(
    settings: &FlockSettings,
    form: UpdateForm,
    start: &FlockState,
    steps: u32,
) -> Result<ParityRow, SimError> {
    let mut reference = settings.clone();
    reference.method = Method::Coherent;
    let mut cpu = CpuFlock::new(&reference, start);
    let mut gpu = CudaFlock::new(settings, start.len() as u32)?;
    gpu.set_update_form(form);
    gpu.set_state(start)?;
    cpu.step()?;
    gpu.step()?;
    let one = cpu.state()?.max_difference(&gpu.state()?);
    for _ in 1..steps {
        cpu.step()?;
        gpu.step()?;
    }
    let many = cpu.state()?.max_difference(&gpu.state()?);
    Ok(ParityRow {
        n: start.len(),
        method: settings.method,
        kernel: gpu.update_kernel(),
        factor: settings.cell_width_factor,
        order: settings.cell_order,
        one,
        many,
        pass: one.0 <= ONE_STEP_TOLERANCE && one.1 <= ONE_STEP_TOLERANCE,
    })
}

/// The whole check. Returns whether everything passed.
pub fn run(
    base: &FlockSettings,
    sizes: &[usize],
    sort_max: u32,
    seed: u64,
) -> Result<bool, SimError> {
    // Fails before the first table line when no GPU is usable.
    drop(Gpu::open()?);
    let mut ok = true;
    println!("GPU flock methods against the CPU reference (max |difference| per component; 1-step limit {ONE_STEP_TOLERANCE:e})");
    println!("| N | scale | method | update kernel | cell width | x-split | keys | sort | 1 step pos | 1 step vel | 10 steps pos | 10 steps vel | result |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &n in sizes {
        // A start with structure: 10 steps of the reference from random, so velocities are set.
        let mut warm = CpuFlock::new(base, &FlockState::random(n, base.params.scale, seed));
        for _ in 0..10 {
            warm.step()?;
        }
        let start = warm.state()?;
        let mut variants = Vec::new();
        for m in Method::ALL {
            use {CellOrder::*, SortArg::*, UpdateForm::*};
            if m == Method::Naive {
                variants.push((m, 1.0, 1, Linear, Counting, Auto));
                continue;
            }
            for f in [1.0f32, 2.0, 1.5, 0.5] {
                variants.push((m, f, 1, Linear, Counting, Auto));
            }
            variants.push((m, 1.0, 4, Linear, Counting, Auto));
            variants.push((m, 0.5, 8, Linear, Counting, Auto));
            variants.push((m, 1.0, 1, Morton, Counting, Auto));
            variants.push((m, 1.0, 4, Linear, Radix, Auto));
            variants.push((m, 2.0, 1, Morton, Radix, Auto));
            if m == Method::Coherent {
                // Both of coherent's update kernels, whatever the size picks.
                for form in [Branched, Predicated] {
                    variants.push((m, 1.0, 4, Linear, Counting, form));
                    variants.push((m, 0.5, 1, Linear, Counting, form));
                    variants.push((m, 1.0, 1, Morton, Counting, form));
                    variants.push((m, 1.0, 4, Linear, Radix, form));
                }
            }
        }
        for (method, factor, x_split, order, sort, form) in variants {
            let mut s = base.clone();
            s.method = method;
            s.cell_width_factor = factor;
            s.x_split = x_split;
            s.cell_order = order;
            s.sort = sort;
            let r = parity(&s, form, &start, 10)?;
            ok &= r.pass;
            println!(
                "| {} | {} | {} | {} | {} | {} | {:?} | {:?} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {} |",
                r.n,
                s.params.scale,
                r.method.name(),
                r.kernel,
                r.factor,
                s.x_split,
                r.order,
                s.sort,
                r.one.0,
                r.one.1,
                r.many.0,
                r.many.1,
                if r.pass { "pass" } else { "FAIL" }
            );
        }
    }
    println!();
    println!("Device radix sort against a CPU stable sort (u32 keys with duplicates, u32 values)");
    println!("| N | key bits | GPU ms | result |");
    println!("|---|---|---|---|");
    let gpu = Gpu::open()?;
    let mut sorter = RadixSort::new(&gpu, sort_max)?;
    let mut sizes: Vec<u32> = vec![1, 2, 255, 256, 4095, 4097, 65_537, 1_000_003, 10_000_000];
    sizes.retain(|&n| n <= sort_max);
    for n in sizes {
        for bits in [8, 16, 24, 32] {
            let r = check_sort(&gpu, &mut sorter, n, bits, seed + n as u64)?;
            ok &= r.pass;
            println!(
                "| {} | {} | {:.3} | {} |",
                r.n,
                r.bits,
                r.ms,
                if r.pass { "pass" } else { "FAIL" }
            );
        }
    }
    Ok(ok)
}
