//! GPU stage timers from CUDA events, read back lazily so timing never stalls the pipeline.

use super::{DriverContext, GpuError};
use crate::timing::StageTimes;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;
use std::time::Duration;

/// Per-stage GPU times from CUDA events, read back lazily (a ring of recent steps) so timing
/// never stalls the pipeline.
///
/// Two ways to time a step: [`StageClock::begin`], [`StageClock::mark`] after each stage and
/// [`StageClock::end`] (an event before the step and one after every stage), or
/// [`StageClock::chain_begin`] and [`StageClock::chain_end`] around a step issued as one unit
/// (a CUDA graph): one event per step, the step timed from the previous step's event to its own, so nothing but the steps
/// themselves sits in the stream and the gaps between steps count in their times.
pub struct StageClock {
    ctx: Arc<CudaContext>,
    slots: Vec<ClockSlot>,
    next: usize,
    chain: Chain,
    times: StageTimes,
    /// Sum of whole-step GPU times (first to last event of each step).
    step_total: Duration,
    /// Each harvested step's GPU time (first to last event), milliseconds, in step order.
    step_ms: Vec<f64>,
}

/// The events of [`StageClock::chain_end`].
#[derive(Default)]
struct Chain {
    /// `ring[i % RING]`: the event after chained step `i` (counted from the last reset).
    ring: Vec<CudaEvent>,
    recorded: usize,
    harvested: usize,
    /// Recorded before the first chained step after a reset: that step's start.
    origin: Option<CudaEvent>,
    name: &'static str,
}

#[derive(Default)]
struct ClockSlot {
    events: Vec<(&'static str, CudaEvent)>,
    used: usize,
    pending: bool,
}

impl StageClock {
    const RING: usize = 64;

    pub fn new(ctx: &Arc<CudaContext>) -> StageClock {
        StageClock {
            ctx: ctx.clone(),
            slots: (0..Self::RING).map(|_| ClockSlot::default()).collect(),
            next: 0,
            chain: Chain::default(),
            times: StageTimes::default(),
            step_total: Duration::ZERO,
            step_ms: Vec::new(),
        }
    }

    fn harvest(&mut self, slot: usize) -> Result<(), GpuError> {
        let s = &mut self.slots[slot];
        if !s.pending {
            return Ok(());
        }
        s.pending = false;
        if s.used > 0 {
            s.events[s.used - 1]
                .1
                .synchronize()
                .ctx("waiting for a CUDA event")?;
        }
        for k in 1..s.used {
            let ms = s.events[k - 1]
                .1
                .elapsed_ms(&s.events[k].1)
                .ctx("reading a CUDA event")?;
            self.times
                .add(s.events[k].0, Duration::from_secs_f64(ms as f64 / 1e3));
        }
        if s.used > 1 {
            let ms = s.events[0]
                .1
                .elapsed_ms(&s.events[s.used - 1].1)
                .ctx("reading a CUDA event")?;
            self.step_total += Duration::from_secs_f64(ms as f64 / 1e3);
            self.step_ms.push(ms as f64);
        }
        self.times.steps += 1;
        Ok(())
    }

    /// Reads back the oldest chained step not read yet.
    fn harvest_chained(&mut self) -> Result<(), GpuError> {
        let c = &mut self.chain;
        let i = c.harvested;
        let end = &c.ring[i % Self::RING];
        end.synchronize().ctx("waiting for a CUDA event")?;
        let start = if i == 0 {
            c.origin
                .as_ref()
                .expect("recorded with the first chained step")
        } else {
            &c.ring[(i - 1) % Self::RING]
        };
        let ms = start.elapsed_ms(end).ctx("reading a CUDA event")? as f64;
        c.harvested += 1;
        let d = Duration::from_secs_f64(ms / 1e3);
        self.times.add(c.name, d);
        self.step_total += d;
        self.step_ms.push(ms);
        self.times.steps += 1;
        Ok(())
    }

    /// Before a step issued as one unit (a CUDA graph): records the first chained step's start
    /// after a reset, nothing otherwise.
    pub fn chain_begin(&mut self, stream: &CudaStream) -> Result<(), GpuError> {
        if self.chain.origin.is_none() {
            let e = self.new_event()?;
            e.record(stream).ctx("recording a CUDA event")?;
            self.chain.origin = Some(e);
        }
        Ok(())
    }

    /// After a step issued as one unit, named `name` in the stage times: records one event; the
    /// step's time runs from the previous chained step's event (or [`StageClock::chain_begin`]'s,
    /// for the first after a reset) to this one.
    pub fn chain_end(&mut self, stream: &CudaStream, name: &'static str) -> Result<(), GpuError> {
        // The event to record into is the start of the oldest step not read yet once that step
        // is two behind: read it first.
        while self.chain.recorded - self.chain.harvested > Self::RING - 2 {
            self.harvest_chained()?;
        }
        if self.chain.ring.len() < Self::RING {
            let e = self.new_event()?;
            self.chain.ring.push(e);
        }
        let c = &mut self.chain;
        c.name = name;
        c.ring[c.recorded % Self::RING]
            .record(stream)
            .ctx("recording a CUDA event")?;
        c.recorded += 1;
        Ok(())
    }

    /// Work other than chained steps is about to go into the stream: the steps recorded so far
    /// are read back, and the next chained step starts from an event of its own.
    pub fn chain_break(&mut self) -> Result<(), GpuError> {
        while self.chain.harvested < self.chain.recorded {
            self.harvest_chained()?;
        }
        self.chain.origin = None;
        self.chain.recorded = 0;
        self.chain.harvested = 0;
        Ok(())
    }

    fn new_event(&self) -> Result<CudaEvent, GpuError> {
        self.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .ctx("creating a CUDA event")
    }

    /// Starts a step (records its first event).
    pub fn begin(&mut self, stream: &CudaStream) -> Result<(), GpuError> {
        let slot = self.next;
        self.harvest(slot)?;
        self.slots[slot].used = 0;
        self.mark(stream, "begin")
    }

    /// Ends the stage `name` (records an event after it).
    pub fn mark(&mut self, stream: &CudaStream, name: &'static str) -> Result<(), GpuError> {
        let s = &mut self.slots[self.next];
        if s.used == s.events.len() {
            let e = self.new_event()?;
            self.slots[self.next].events.push((name, e));
        }
        let s = &mut self.slots[self.next];
        s.events[s.used].0 = name;
        s.events[s.used]
            .1
            .record(stream)
            .ctx("recording a CUDA event")?;
        s.used += 1;
        Ok(())
    }

    /// Ends the step.
    pub fn end(&mut self) {
        self.slots[self.next].pending = true;
        self.next = (self.next + 1) % Self::RING;
    }

    /// All stage times so far (waits for the recorded steps to finish).
    pub fn times(&mut self) -> Result<StageTimes, GpuError> {
        for k in 0..Self::RING {
            let slot = (self.next + k) % Self::RING;
            self.harvest(slot)?;
        }
        while self.chain.harvested < self.chain.recorded {
            self.harvest_chained()?;
        }
        Ok(self.times.clone())
    }

    /// Mean GPU time per step (first to last event), milliseconds.
    pub fn mean_step_ms(&mut self) -> Result<Option<f64>, GpuError> {
        self.times()?;
        Ok((self.times.steps > 0)
            .then(|| self.step_total.as_secs_f64() * 1e3 / self.times.steps as f64))
    }

    pub fn reset(&mut self) -> Result<(), GpuError> {
        self.times()?;
        self.chain_break()?;
        self.times.reset();
        self.step_total = Duration::ZERO;
        self.step_ms.clear();
        Ok(())
    }

    /// Per-step GPU times (ms) since the last reset.
    pub fn step_ms(&mut self) -> Result<Vec<f64>, GpuError> {
        self.times()?;
        Ok(self.step_ms.clone())
    }
}
