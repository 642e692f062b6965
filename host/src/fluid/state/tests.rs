//! The window a GPU backend copies holds every slot of its cells, and converting through it
//! gives the bytes converting the whole buffer gives.

use super::window::Window;
use super::{gather, scatter};
use murmur_common::lbm::{Fp16S, InPlace, Lattice, Layout, Populations, Storage};

fn through_window<S: Storage<Elem = u16>>(l: Lattice, layout: Layout, step: u64) {
    let pops = Populations::<S>::new(l, layout, step);
    let buf: Vec<u16> = (0..pops.len()).map(|i| (i * 7919 % 65521) as u16).collect();
    let n = l.cells();
    let mut whole = vec![0u8; n * 54];
    gather(&pops, 0..n, |i| buf.get(i).copied(), &mut whole).unwrap();
    // The whole lattice's bytes written into a blank buffer fill every slot.
    let mut blank = vec![0u16; buf.len()];
    scatter(&pops, 0..n, &whole, Some, &mut blank).unwrap();
    assert!(blank == buf, "{layout:?} step {step}");
    // A slot outside the buffer is refused.
    let e = scatter(&pops, 0..n, &whole, |i| Some(i + 1), &mut blank).unwrap_err();
    assert!(e.to_string().contains("outside"), "{e}");
    for piece in [1usize, 7, 40, n] {
        let mut start = 0;
        while start < n {
            let cells = start..(start + piece).min(n);
            let w = Window::of(&pops, cells.clone());
            let staged: Vec<u16> = w
                .ranges
                .iter()
                .flat_map(|(r, _)| buf[r.clone()].iter().copied())
                .collect();
            assert_eq!(staged.len(), w.len);
            let mut out = vec![0u8; cells.len() * 54];
            gather(
                &pops,
                cells.clone(),
                |i| w.at(i).map(|k| staged[k]),
                &mut out,
            )
            .unwrap();
            assert_eq!(out, whole[cells.start * 54..cells.end * 54], "{cells:?}");
            // Writing the piece back through the window changes nothing.
            let mut back = staged.clone();
            scatter(&pops, cells.clone(), &out, |i| w.at(i), &mut back).unwrap();
            assert_eq!(back, staged);
            start = cells.end;
        }
    }
}

#[test]
fn a_window_holds_every_slot_of_its_cells() {
    let l = Lattice::new(5, 4, 6);
    for layout in [Layout::SOA, Layout { alpha: 1 }, Layout { alpha: 8 }] {
        for step in [0u64, 1] {
            through_window::<Fp16S>(l, layout, step);
            through_window::<InPlace<Fp16S>>(l, layout, step);
        }
    }
    // A lattice long enough along z that an in-place window is not the whole lattice.
    let long = Lattice::new(4, 3, 20);
    for step in [3u64, 4] {
        through_window::<InPlace<Fp16S>>(long, Layout { alpha: 4 }, step);
    }
    let pops = Populations::<InPlace<Fp16S>>::new(long, Layout { alpha: 4 }, 1);
    assert!(Window::of(&pops, 100..112).len < pops.len());
}
