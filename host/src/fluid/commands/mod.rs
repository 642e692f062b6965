//! The bodies of `fluid validate | bench | parity | case | convergence | checkpoint-bench` and
//! the backend opener they share.

pub mod bench;
pub mod case;
pub mod channel;
mod channel_plot;
pub mod checkpoint_bench;
pub mod convergence;
pub mod parity;
pub mod validate;

use super::cli::StorageArgs;
use super::defaults::{Defaults, DeviceClass};
use super::driver::{self, BackendChoice};
use super::{FluidBackend, FluidError, Setup};
use murmur_common::lbm::CollisionModel;

/// The models of a `--models` list: all of them when it is empty.
fn models(m: &[CollisionModel]) -> Vec<CollisionModel> {
    if m.is_empty() {
        CollisionModel::ALL.to_vec()
    } else {
        m.to_vec()
    }
}

/// Opens a backend of `choice` on each setup it is given, stored as `storage` says when given,
/// a knob it leaves out from the device defaults of the device `choice` opens (the setup's own
/// storage and knobs without `storage`).
fn opener(
    choice: BackendChoice,
    storage: Option<StorageArgs>,
) -> impl FnMut(&Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    let device = storage.map(|_| Defaults::of(DeviceClass::expected(choice)));
    move |setup: &Setup| {
        let stored;
        let setup = match (storage, &device) {
            (Some(st), Some(device)) => {
                let mut s = setup.clone();
                st.apply(&mut s, device);
                stored = s;
                &stored
            }
            _ => setup,
        };
        match choice {
            BackendChoice::Cpu => driver::open_cpu(setup),
            BackendChoice::Cuda => super::cuda::open(setup),
            BackendChoice::Auto => driver::open_backend(choice, setup).map(|(b, _)| b),
        }
    }
}
